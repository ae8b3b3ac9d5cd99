#include "ops/gather.h"

#include <algorithm>

#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

Value gather(Builder& b, Value table, Value indices, int64_t axis) {
  return b.emit1("gather", {table, indices}, {{"axis", axis}});
}

namespace {

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

// The table is viewed as [outer, dim, inner] and the result as [outer, n, inner]
// (n = number of indices), so each lookup copies `inner` contiguous elements.
void gather_reference(const KernelArgs& args) {
  const Shape table_shape = args.in[0]->shape();
  const auto axis = static_cast<size_t>(normalize_axis(args.attrs.get_int("axis"), args.in[0]->type().rank()));
  const int64_t dim = table_shape[axis];
  size_t outer = 1, inner = 1;
  for (size_t i = 0; i < table_shape.size(); ++i)
    if (i != axis) (i < axis ? outer : inner) *= static_cast<size_t>(table_shape[i]);
  const Tensor::I32& indices = args.in[1]->i32();
  for (size_t j = 0; j < indices.size(); ++j) {
    const int32_t index = indices.data()[j];
    if (index < 0 || index >= dim) {
      throw Error(std::string("gather: index ")
                      .append(std::to_string(index))
                      .append(" (at flat position ")
                      .append(std::to_string(j))
                      .append(" of the indices) is out of range [0, ")
                      .append(std::to_string(dim))
                      .append(") for axis ")
                      .append(std::to_string(axis)));
    }
  }
  dispatch_dtype(args.in[0]->dtype(), [&](auto t) {
    using T = decltype(t);
    const T* table = args.in[0]->as<T>().data();
    T* out = args.out[0]->as<T>().data();
    const size_t n = indices.size();
    for (size_t o = 0; o < outer; ++o)
      for (size_t j = 0; j < n; ++j) {
        const auto row = static_cast<size_t>(indices.data()[j]);
        std::copy_n(table + (o * static_cast<size_t>(dim) + row) * inner, inner, out + (o * n + j) * inner);
      }
  });
}

}  // namespace

void register_gather(OpRegistry& r) {
  OpDef d;
  d.name = "gather";
  d.summary = "np.take(table, indices i32, axis): embedding lookup";
  d.min_operands = d.max_operands = 2;
  d.attrs = {optional_attr("axis", int64_t{0})};
  d.infer = gather_infer;
  d.reference = gather_reference;
  r.add(std::move(d));
}

}  // namespace kiln::ops
