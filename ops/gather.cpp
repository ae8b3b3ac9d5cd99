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

Value update_slice(Builder& b, Value x, Value update, Value start, int64_t axis) {
  return b.emit1("update_slice", {x, update, start}, {{"axis", axis}});
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

// ---- update_slice ----

std::vector<TensorType> update_slice_infer(const std::vector<TensorType>& in, const Attrs& attrs) {
  const TensorType &x = in[0], &update = in[1], &start = in[2];
  check_min_rank(x, 1, "x");
  if (update.dtype != x.dtype)
    throw Error("update must be " + std::string(dtype_name(x.dtype)) + " as x is, got " + type_str(update));
  if (start.dtype != DType::i32 || start.numel() != 1)
    throw Error("start must be one i32 (shape [] or [1]), got " + type_str(start));
  const auto axis = static_cast<size_t>(normalize_axis(attrs.get_int("axis"), x.rank()));
  bool fits = update.rank() == x.rank();
  for (size_t i = 0; fits && i < x.shape.size(); ++i)
    fits = i == axis ? update.shape[i] <= x.shape[i] : update.shape[i] == x.shape[i];
  if (!fits)
    throw Error("update " + shape_str(update.shape) + " must have x's dims " + shape_str(x.shape) +
                " but along axis " + std::to_string(axis) + ", and at most its length there");
  return {x};
}

// The clamped start: the block [start, start + n) lies within [0, dim).
size_t clamped_start(int32_t start, size_t dim, size_t n) {
  return static_cast<size_t>(std::clamp<int64_t>(start, 0, static_cast<int64_t>(dim - n)));
}

void update_slice_reference(const KernelArgs& args) {
  const auto axis = static_cast<size_t>(normalize_axis(args.attrs.get_int("axis"), args.in[0]->type().rank()));
  const TableLayout l = table_layout(args.in[0]->shape(), axis);
  const auto n = static_cast<size_t>(args.in[1]->shape()[axis]);
  const size_t start = clamped_start(args.in[2]->i32().data()[0], l.dim, n);
  dispatch_dtype(args.in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const T* x = args.in[0]->as<T>().data();
    const T* update = args.in[1]->as<T>().data();
    T* out = args.out[0]->as<T>().data();
    std::copy_n(x, l.outer * l.dim * l.inner, out);
    for (size_t o = 0; o < l.outer; ++o)
      std::copy_n(update + o * n * l.inner, n * l.inner, out + (o * l.dim + start) * l.inner);
  });
}

// dx: dy with the block zeroed; d update: dy's block, gathered at the clamped start.
std::vector<Value> update_slice_gradient(Builder& b, const Node& node, const std::vector<Value>& dy) {
  const TensorType& x = b.type(node.operands[0]);
  const TensorType& update = b.type(node.operands[1]);
  const int64_t axis = normalize_axis(node.attrs.get_int("axis"), x.rank());
  const int64_t n = update.shape[static_cast<size_t>(axis)], dim = x.shape[static_cast<size_t>(axis)];
  const Value zeros = b.emit1("fill", {}, {{"shape", update.shape}, {"value", 0.0}, {"dtype", update.dtype}});
  const Value start = b.emit1("reshape", {node.operands[2]}, {{"shape", Shape{1}}});
  const Value first = b.emit1(
      "minimum", {b.emit1("maximum", {start, b.emit1("fill", {}, {{"shape", Shape{1}}, {"dtype", DType::i32}})}),
                  b.emit1("fill", {}, {{"shape", Shape{1}}, {"value", static_cast<double>(dim - n)}, {"dtype", DType::i32}})});
  const Value rows = b.emit1("add", {b.emit1("iota", {}, {{"shape", Shape{n}}, {"dtype", DType::i32}}), first});
  return {update_slice(b, dy[0], zeros, node.operands[2], axis), gather(b, dy[0], rows, axis), Value{}};
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
              .may_fail = [](const std::vector<TensorType>&) { return true; },
              .lowering = Lowering::elemental});

  r.add(OpDef{.name = "scatter_add",
              .summary = "zero table with dim axis of length size, updates added at indices i32 (gather's adjoint)",
              .min_operands = 2,
              .max_operands = 2,
              .attrs = {optional_attr("axis", int64_t{0}), required_attr("size", AttrKind::integer)},
              .infer = scatter_add_infer,
              .reference = scatter_add_reference,
              .gradient = scatter_add_gradient,
              .lowering = Lowering::reads_memory});

  r.add(OpDef{.name = "update_slice",
              .summary = "x with update written along {axis} from start (i32 scalar, clamped to fit): "
                         "XLA's dynamic_update_slice, a decoder's cache write",
              .min_operands = 3,
              .max_operands = 3,
              .attrs = {optional_attr("axis", int64_t{0})},
              .infer = update_slice_infer,
              .reference = update_slice_reference,
              .gradient = update_slice_gradient,
              .overwrites_operand0 = true,
              .lowering = Lowering::reads_memory});
}

}  // namespace kiln::ops
