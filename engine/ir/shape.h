#pragma once
// Static shapes and tensor types: row-major, contiguous, every dim known.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"

namespace kiln {

using Shape = std::vector<int64_t>;

// Throws kiln::Error if the count overflows int64, or the product of the non-zero
// dims does (a zero-size shape's strides).
int64_t numel(const Shape& s);
std::string shape_str(const Shape& s);  // "[2,3]", "[]" for a scalar

// Numpy broadcasting of two shapes; throws kiln::Error naming both if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

// Normalizes a possibly negative axis against rank; throws kiln::Error if out of range.
int64_t normalize_axis(int64_t axis, int64_t rank);

struct TensorType {
  DType dtype = DType::f32;
  Shape shape;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return kiln::numel(shape); }
  bool operator==(const TensorType&) const = default;
};

std::string type_str(const TensorType& t);  // "f32[2,3]"

// Throws kiln::Error "f32[0,-3] has a negative dimension", or numel()'s error,
// unless a tensor of type `t` can exist: what every declaration and every op's
// result must be (the parser checks its text's types the same way).
void check_countable(const TensorType& t);

}  // namespace kiln
