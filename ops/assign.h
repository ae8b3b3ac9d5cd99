#pragma once
// assign: the graph's only side effect, writing a new value into a param or state.
#include "engine/ir/builder.h"

namespace kiln::ops {

// target := value when the step ends (every node of the step sees the old value).
// value must have target's type; the verifier checks that target is a param or
// state assigned once.
void assign(Builder& b, Value target, Value value);

}  // namespace kiln::ops
