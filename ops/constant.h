#pragma once
// Builder helpers for the constant ops (no operands).
#include <cstdint>

#include "engine/ir/builder.h"

namespace kiln::ops {

// A tensor of `shape` with every element `value` (converted to `dtype` as cast does).
Value fill(Builder& b, const Shape& shape, double value = 0.0, DType dtype = DType::f32, const std::string& name = {});
// A tensor of `shape` whose elements are their index along `axis`.
Value iota(Builder& b, const Shape& shape, int64_t axis = 0, DType dtype = DType::i32);
// The additive attention mask f32[size,size]: 0 where col <= row, -inf where col > row.
Value causal_mask(Builder& b, int64_t size);

}  // namespace kiln::ops
