#pragma once
// Collectives as ops: what a data-parallel training step says about the other
// ranks (engine/tensor/collectives.h). With one rank they are the identity.
#include <vector>

#include "engine/ir/builder.h"

namespace kiln::ops {

// The sum of each operand over every rank (f32 or i32, any shapes): one
// result per operand, of its type. One node's operands travel together (a
// bucket); the compiler's allreduce-buckets pass makes such buckets from
// single-operand allreduces.
std::vector<Value> allreduce(Builder& b, const std::vector<Value>& xs);
Value allreduce(Builder& b, Value x);

}  // namespace kiln::ops
