#pragma once
// Shape ops: reshape, transpose, broadcast, slice, concat. All dtypes.
#include <cstdint>
#include <vector>

#include "engine/ir/builder.h"

namespace kiln::ops {

// Same elements in row-major order under a new shape; one dim may be -1 (inferred).
Value reshape(Builder& b, Value x, Shape shape);
// Axes permuted: result dim i is x's dim perm[i] (perm is a permutation of 0..rank-1).
Value transpose(Builder& b, Value x, std::vector<int64_t> perm);
// np.broadcast_to(x, shape).
Value broadcast(Builder& b, Value x, Shape shape);
// x[starts[i]:ends[i]] along axes[i], step 1; negative bounds count from the end and
// out-of-range bounds are clamped as in Python. An empty result is an error.
Value slice(Builder& b, Value x, std::vector<int64_t> axes, std::vector<int64_t> starts, std::vector<int64_t> ends);
// np.concatenate(xs, axis): same dtype and rank, equal dims except along `axis`.
Value concat(Builder& b, const std::vector<Value>& xs, int64_t axis);

}  // namespace kiln::ops
