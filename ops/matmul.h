#pragma once
// Matrix product, batched: the last two dims of each operand are the matrix, the
// leading dims are batch dims broadcast numpy-style ([2,1,3,4] x [5,4,6] -> [2,5,3,6]).
#include "engine/ir/builder.h"

namespace kiln::ops {

// lhs @ rhs, with lhs (rhs) read as its transpose over the last two dims when
// transpose_a (transpose_b) is set. f32, rank >= 2 each.
Value matmul(Builder& b, Value lhs, Value rhs, bool transpose_a = false, bool transpose_b = false);

}  // namespace kiln::ops
