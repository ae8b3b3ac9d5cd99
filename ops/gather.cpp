#include "ops/gather.h"

#include <algorithm>
#include <xtensor/xstrided_view.hpp>
#include <xtensor/xview.hpp>

#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

Value gather(Builder& b, Value table, Value indices, int64_t axis) {
  return b.emit1("gather", {table, indices}, {{"axis", axis}});
}

Value scatter_add(Builder& b, Value updates, Value indices, int64_t size, int64_t axis) {
  return b.emit1("scatter_add", {updates, indices}, {{"axis", axis}, {"size", size}});
}

namespace {

// A table seen as [outer, dim, inner] around `axis`, and gather's result (scatter_add's
// updates) as [outer, n, inner] with n indices: one lookup moves `inner` contiguous elements.
struct TableLayout {
  size_t outer = 1, dim = 0, inner = 1;
};

TableLayout table_layout(const Shape& table, size_t axis) {
  TableLayout l;
  l.dim = static_cast<size_t>(table[axis]);
  for (size_t i = 0; i < table.size(); ++i)
    if (i != axis) (i < axis ? l.outer : l.inner) *= static_cast<size_t>(table[i]);
  return l;
}

// Throws a run-time error naming the first index outside [0, dim).
void check_indices(const std::string& op, const Tensor::I32& indices, size_t dim, size_t axis) {
  for (size_t j = 0; j < indices.size(); ++j) {
    const int32_t index = indices.data()[j];
    if (index < 0 || static_cast<size_t>(index) >= dim) {
      throw Error(std::string(op)
                      .append(": index ")
                      .append(std::to_string(index))
                      .append(" (at flat position ")
                      .append(std::to_string(j))
                      .append(" of the indices) is out of range [0, ")
                      .append(std::to_string(dim))
                      .append(") for axis ")
                      .append(std::to_string(axis)));
    }
  }
}

// ---- gather ----

std::vector<TensorType> gather_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  const TensorType& table = in[0];
  check_min_rank(table, 1, "table");
  check_dtype(in[1], {DType::i32}, "indices");
  const auto axis = static_cast<size_t>(normalize_axis(attrs.get_int("axis"), table.rank()));
  Shape out(table.shape.begin(), table.shape.begin() + static_cast<std::ptrdiff_t>(axis));
  out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
  out.insert(out.end(), table.shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, table.shape.end());
  return {{table.dtype, out}};
}

void gather_reference(const KernelArgs& args) {
  const auto axis = static_cast<size_t>(normalize_axis(args.attrs.get_int("axis"), args.in[0]->type().rank()));
  const TableLayout l = table_layout(args.in[0]->shape(), axis);
  const Tensor::I32& indices = args.in[1]->i32();
  check_indices("gather", indices, l.dim, axis);
  dispatch_dtype(args.in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const T* table = args.in[0]->as<T>().data();
    T* out = args.out[0]->as<T>().data();
    const size_t n = indices.size();
    for (size_t o = 0; o < l.outer; ++o)
      for (size_t j = 0; j < n; ++j) {
        const auto row = static_cast<size_t>(indices.data()[j]);
        std::copy_n(table + (o * l.dim + row) * l.inner, l.inner, out + (o * n + j) * l.inner);
      }
  });
}

// d table: dy scattered back to the looked-up rows; repeated indices accumulate.
std::vector<Value> gather_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  const TensorType& table = b.type(node.operands[0]);
  const int64_t axis = node.attrs.get_int("axis");
  const int64_t size = table.shape[static_cast<size_t>(normalize_axis(axis, table.rank()))];
  return {scatter_add(b, dy[0], node.operands[1], size, axis), Value{}};
}

// ---- scatter_add ----

std::vector<TensorType> scatter_add_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  const TensorType &updates = in[0], &indices = in[1];
  check_dtype(updates, kNumeric, "updates");
  check_dtype(indices, {DType::i32}, "indices");
  const int64_t size = attrs.get_int("size");
  if (size < 0) throw Error(std::string("size must be non-negative, got ").append(std::to_string(size)));
  if (updates.rank() < indices.rank()) {
    throw Error(std::string("updates (rank ")
                    .append(std::to_string(updates.rank()))
                    .append(") must have at least the rank of the indices (")
                    .append(std::to_string(indices.rank()))
                    .append(")"));
  }
  // The result (the table) has the indices' dims replaced by one dim of length size.
  const int64_t rank = updates.rank() - indices.rank() + 1;
  const auto axis = static_cast<std::ptrdiff_t>(normalize_axis(attrs.get_int("axis"), rank));
  const auto at_axis = updates.shape.begin() + axis;
  if (!std::equal(indices.shape.begin(), indices.shape.end(), at_axis)) {
    throw Error(std::string("updates must have the indices' shape ")
                    .append(shape_str(indices.shape))
                    .append(" from axis ")
                    .append(std::to_string(axis))
                    .append(" (the layout of gather's result), got ")
                    .append(shape_str(updates.shape)));
  }
  Shape out(updates.shape.begin(), at_axis);
  out.push_back(size);
  out.insert(out.end(), at_axis + indices.rank(), updates.shape.end());
  return {{updates.dtype, out}};
}

void scatter_add_reference(const KernelArgs& args) {
  const auto axis = static_cast<size_t>(normalize_axis(args.attrs.get_int("axis"), args.out[0]->type().rank()));
  const TableLayout l = table_layout(args.out[0]->shape(), axis);
  const Tensor::I32& indices = args.in[1]->i32();
  check_indices("scatter_add", indices, l.dim, axis);
  for_dtype<float, int32_t>(args.out[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    auto table = xt::reshape_view(args.out[0]->as<T>(), {l.outer, l.dim, l.inner});
    const auto updates = xt::reshape_view(args.in[0]->as<T>(), {l.outer, indices.size(), l.inner});
    for (size_t j = 0; j < indices.size(); ++j)
      xt::view(table, xt::all(), indices.data()[j], xt::all()) += xt::view(updates, xt::all(), j, xt::all());
  });
}

// d updates: dy read back at the same positions, which is gather.
std::vector<Value> scatter_add_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  return {gather(b, dy[0], node.operands[1], node.attrs.get_int("axis")), Value{}};
}

}  // namespace

void register_gather(OpRegistry& r) {
  r.add(OpDef{.name = "gather",
              .summary = "np.take(table, indices i32, axis): embedding lookup",
              .min_operands = 2,
              .max_operands = 2,
              .attrs = {optional_attr("axis", int64_t{0})},
              .infer = gather_infer,
              .reference = gather_reference,
              .gradient = gather_gradient,
              // An index out of range is an error.
              .may_fail = [](const std::vector<TensorType>&) { return true; }});

  r.add(OpDef{.name = "scatter_add",
              .summary = "zero table with dim axis of length size, updates added at indices i32 (gather's adjoint)",
              .min_operands = 2,
              .max_operands = 2,
              .attrs = {optional_attr("axis", int64_t{0}), required_attr("size", AttrKind::integer)},
              .infer = scatter_add_infer,
              .reference = scatter_add_reference,
              .gradient = scatter_add_gradient});
}

}  // namespace kiln::ops
