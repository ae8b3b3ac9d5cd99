#pragma once
// Builder helpers for the reductions. `axes` may be negative; empty means all axes.
// max's gradient is divided equally among all elements equal to the max.
#include <cstdint>
#include <vector>

#include "engine/ir/builder.h"

namespace kiln::ops {

Value sum(Builder& b, Value x, std::vector<int64_t> axes = {}, bool keepdims = false);   // f32 or i32
Value mean(Builder& b, Value x, std::vector<int64_t> axes = {}, bool keepdims = false);  // f32
Value max(Builder& b, Value x, std::vector<int64_t> axes = {}, bool keepdims = false);   // f32 or i32

}  // namespace kiln::ops
