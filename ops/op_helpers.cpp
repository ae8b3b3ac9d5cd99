#include "ops/op_helpers.h"

#include <algorithm>

namespace kiln::ops {

AttrSpec required_attr(std::string name, AttrKind kind) { return AttrSpec{.name = std::move(name), .kind = kind}; }

AttrSpec optional_attr(std::string name, Attr default_value) {
  const AttrKind kind = attr_kind(default_value);
  return AttrSpec{.name = std::move(name), .kind = kind, .default_value = std::move(default_value)};
}

std::string dtypes_str(const DTypes& allowed) {
  std::string s;
  for (size_t i = 0; i < allowed.size(); ++i) {
    if (i) s += i + 1 == allowed.size() ? " or " : ", ";
    s += dtype_name(allowed[i]);
  }
  return s;
}

void check_dtype(const TensorType& t, const DTypes& allowed, const std::string& role) {
  if (std::find(allowed.begin(), allowed.end(), t.dtype) != allowed.end()) return;
  std::string msg = role;
  msg += " must be ";
  msg += dtypes_str(allowed);
  msg += ", got ";
  msg += dtype_name(t.dtype);
  throw Error(msg);
}

void check_same_dtype(const TensorType& a, const TensorType& b) {
  if (a.dtype == b.dtype) return;
  std::string msg = "operands must have the same dtype, got ";
  msg += dtype_name(a.dtype);
  msg += " and ";
  msg += dtype_name(b.dtype);
  throw Error(msg);
}

void check_rank(const TensorType& t, int64_t rank, const std::string& role) {
  if (t.rank() == rank) return;
  std::string msg = role;
  msg += " must have rank ";
  msg += std::to_string(rank);
  msg += ", got rank ";
  msg += std::to_string(t.rank());
  throw Error(msg);
}

void check_min_rank(const TensorType& t, int64_t min_rank, const std::string& role) {
  if (t.rank() >= min_rank) return;
  std::string msg = role;
  msg += " must have at least rank ";
  msg += std::to_string(min_rank);
  msg += ", got rank ";
  msg += std::to_string(t.rank());
  throw Error(msg);
}

void check_dims_nonnegative(const Shape& s, const std::string& role) {
  if (std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; })) return;
  std::string msg = role;
  msg += " must not have negative dims, got ";
  msg += shape_str(s);
  throw Error(msg);
}

std::string operand_role(size_t i) {
  std::string s = "operand ";
  s += std::to_string(i);
  return s;
}

Shape broadcast_all(const std::vector<Shape>& shapes) {
  Shape out;
  for (const Shape& s : shapes) out = broadcast_shapes(out, s);
  return out;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, bool empty_means_all) {
  std::vector<int64_t> out;
  if (axes.empty() && empty_means_all) {
    for (int64_t a = 0; a < rank; ++a) out.push_back(a);
    return out;
  }
  for (int64_t axis : axes) {
    const int64_t a = normalize_axis(axis, rank);
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      std::string msg = "duplicate axis ";
      msg += std::to_string(axis);
      msg += " in ";
      msg += shape_str(axes);
      msg += " for rank ";
      msg += std::to_string(rank);
      throw Error(msg);
    }
    out.push_back(a);
  }
  std::sort(out.begin(), out.end());
  return out;
}

InferFn same_type_infer(DTypes allowed) {
  return [allowed = std::move(allowed)](const std::vector<TensorType>& in, const Attrs&) {
    check_dtype(in[0], allowed, operand_role(0));
    return std::vector<TensorType>{in[0]};
  };
}

InferFn broadcast_infer(DTypes allowed, std::optional<DType> result) {
  return [allowed = std::move(allowed), result](const std::vector<TensorType>& in, const Attrs&) {
    std::vector<Shape> shapes;
    for (size_t i = 0; i < in.size(); ++i) {
      check_dtype(in[i], allowed, operand_role(i));
      if (i) check_same_dtype(in[0], in[i]);
      shapes.push_back(in[i].shape);
    }
    return std::vector<TensorType>{{result.value_or(in[0].dtype), broadcast_all(shapes)}};
  };
}

std::vector<std::size_t> xt_axes(const std::vector<int64_t>& axes) { return {axes.begin(), axes.end()}; }

}  // namespace kiln::ops
