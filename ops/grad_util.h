#pragma once
// Helpers shared by the gradient rules of several op families.
#include "engine/ir/builder.h"

namespace kiln::ops {

// Sums a broadcast gradient back to an operand's shape: over the leading dims the
// operand lacks and over the dims where the operand has size 1. Returns `g` itself
// when the shapes already match.
Value sum_to_shape(Builder& b, Value g, const Shape& shape);

}  // namespace kiln::ops
