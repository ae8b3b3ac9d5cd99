#include "engine/ir/shape.h"

#include <algorithm>

#include "engine/ir/error.h"

namespace kiln {

int64_t numel(const Shape& s) {
  int64_t n = 1, strides = 1;
  for (int64_t d : s) {
    if (__builtin_mul_overflow(n, d, &n)) throw Error("shape " + shape_str(s) + " has too many elements");
    // xtensor computes the strides of a zero-size array too: they must not overflow either.
    if (__builtin_mul_overflow(strides, std::max<int64_t>(d, 1), &strides))
      throw Error("shape " + shape_str(s) + " is too large (the product of its non-zero dimensions overflows)");
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error("incompatible shapes " + shape_str(a) + " and " + shape_str(b) + " for broadcasting");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

std::string type_str(const TensorType& t) { return std::string(dtype_name(t.dtype)) + shape_str(t.shape); }

void check_countable(const TensorType& t) {
  for (int64_t d : t.shape)
    if (d < 0) throw Error(type_str(t) + " has a negative dimension");
  (void)t.numel();
}

}  // namespace kiln
