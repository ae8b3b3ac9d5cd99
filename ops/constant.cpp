// Constant ops: fill, iota, causal_mask.
#include "ops/constant.h"

#include <limits>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xoperation.hpp>

#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

namespace {

// A value the dtype cannot hold would be saturated, rounded to inf or read as
// true, differently by the interpreter and the JIT: refused instead.
void check_fits(double value, DType dtype) {
  const std::string v = attr_str(Attr(value));
  switch (dtype) {
    case DType::f32:
      if (std::isfinite(value) && std::abs(value) > std::numeric_limits<float>::max())
        throw Error("value " + v + " does not fit f32 (its largest magnitude is 3.4028235e38)");
      return;
    case DType::i32:
      if (!(value == std::trunc(value) && value >= std::numeric_limits<int32_t>::min() &&
            value <= std::numeric_limits<int32_t>::max()))
        throw Error("value " + v + " does not fit i32 (an integer from -2147483648 to 2147483647)");
      return;
    case DType::boolean:
      if (value != 0 && value != 1) throw Error("value " + v + " does not fit bool (0 or 1)");
      return;
    case DType::bf16:
      // Past f32's range first: converting such a double to float is undefined.
      if (std::isfinite(value) && (std::abs(value) > std::numeric_limits<float>::max() ||
                                   std::isinf(round_to_bf16(static_cast<float>(value)))))
        throw Error("value " + v + " does not fit bf16 (its largest magnitude is 3.3895314e38)");
      return;
  }
}

std::vector<TensorType> infer_fill(const std::vector<TensorType>&, const Attrs& attrs) {
  const Shape& shape = attrs.get_ints("shape");
  check_dims_nonnegative(shape, "shape");
  const DType dtype = attrs.get_dtype("dtype");
  check_fits(attrs.get_float("value"), dtype);
  return {{dtype, shape}};
}

void fill_kernel(const KernelArgs& k) {
  const double value = k.attrs.get_float("value");
  dispatch_dtype(k.out[0]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    k.out[0]->as<T>().fill(convert_element<T>(value));
  });
}

std::vector<TensorType> infer_iota(const std::vector<TensorType>&, const Attrs& attrs) {
  const Shape& shape = attrs.get_ints("shape");
  check_dims_nonnegative(shape, "shape");
  const DType dtype = attrs.get_dtype("dtype");
  check_dtype({dtype, shape}, kNumeric, "dtype");
  const int64_t axis = normalize_axis(attrs.get_int("axis"), static_cast<int64_t>(shape.size()));
  // Every index must be exact: i32 holds them up to 2^31 - 1, f32 up to 2^24.
  const int64_t most = dtype == DType::i32 ? int64_t{1} << 31 : (int64_t{1} << 24) + 1;
  const int64_t length = shape[static_cast<size_t>(axis)];
  if (length > most)
    throw Error("the last index along axis " + std::to_string(axis) + ", " + std::to_string(length - 1) +
                ", does not fit " + std::string(dtype_name(dtype)) + " exactly (indices up to " +
                std::to_string(most - 1) + ")");
  return {{dtype, shape}};
}

void iota_kernel(const KernelArgs& k) {
  const Shape shape = k.out[0]->shape();
  const size_t axis = static_cast<size_t>(normalize_axis(k.attrs.get_int("axis"), static_cast<int64_t>(shape.size())));
  // arange along `axis`, shaped [1,..,n,..,1] and broadcast to the full shape.
  std::vector<size_t> line_shape(shape.size(), 1);
  line_shape[axis] = static_cast<size_t>(shape[axis]);
  for_dtype<float, int32_t>(k.out[0]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    xt::xarray<T> line = xt::arange<T>(static_cast<T>(shape[axis]));
    line.reshape(line_shape);
    store(*k.out[0], xt::broadcast(line, xt_shape(shape)));
  });
}

std::vector<TensorType> infer_causal_mask(const std::vector<TensorType>&, const Attrs& attrs) {
  const int64_t size = attrs.get_int("size");
  if (size < 0) {
    std::string msg = "size must not be negative, got ";
    msg += std::to_string(size);
    throw Error(msg);
  }
  return {{DType::f32, {size, size}}};
}

void causal_mask_kernel(const KernelArgs& k) {
  const auto n = static_cast<size_t>(k.attrs.get_int("size"));
  xt::xarray<int64_t> row = xt::arange<int64_t>(static_cast<int64_t>(n));
  row.reshape({n, 1});
  const xt::xarray<int64_t> col = xt::arange<int64_t>(static_cast<int64_t>(n));
  store(*k.out[0], xt::where(col > row, -std::numeric_limits<float>::infinity(), 0.0f));
}

}  // namespace

void register_constants(OpRegistry& r) {
  r.add(OpDef{.name = "fill",
              .summary = "a tensor of {shape} filled with {value} as {dtype}",
              .attrs = {required_attr("shape", AttrKind::ints), optional_attr("dtype", DType::f32),
                        optional_attr("value", 0.0)},
              .infer = infer_fill,
              .reference = fill_kernel,
              .constant = true,
              .lowering = Lowering::elemental});
  r.add(OpDef{.name = "iota",
              .summary = "a tensor of {shape} holding each element's index along {axis}",
              .attrs = {required_attr("shape", AttrKind::ints), optional_attr("axis", int64_t{0}),
                        optional_attr("dtype", DType::i32)},
              .infer = infer_iota,
              .reference = iota_kernel,
              .constant = true,
              .lowering = Lowering::elemental});
  r.add(OpDef{.name = "causal_mask",
              .summary = "f32[size,size]: 0 where col <= row, -inf where col > row (additive attention mask)",
              .attrs = {required_attr("size", AttrKind::integer)},
              .infer = infer_causal_mask,
              .reference = causal_mask_kernel,
              .constant = true,
              .lowering = Lowering::elemental});
}

Value fill(Builder& b, const Shape& shape, double value, DType dtype, const std::string& name) {
  return b.emit1("fill", {}, {{"shape", shape}, {"value", value}, {"dtype", dtype}}, name);
}

Value iota(Builder& b, const Shape& shape, int64_t axis, DType dtype) {
  return b.emit1("iota", {}, {{"shape", shape}, {"axis", axis}, {"dtype", dtype}});
}

Value causal_mask(Builder& b, int64_t size) { return b.emit1("causal_mask", {}, {{"size", size}}); }

}  // namespace kiln::ops
