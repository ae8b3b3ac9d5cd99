#pragma once
// Helpers shared by the gradient rules of several op families.
#include "engine/ir/builder.h"

namespace kiln::ops {

// Sums a broadcast gradient back to an operand's shape: over the leading dims the
// operand lacks and over the dims where the operand has size 1. Returns `g` itself
// when the shapes already match.
// `shape` is taken by value: a caller's b.type(v).shape would dangle once this
// adds nodes (the graph's value storage may move).
Value sum_to_shape(Builder& b, Value g, Shape shape);

}  // namespace kiln::ops
