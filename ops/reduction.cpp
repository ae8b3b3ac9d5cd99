// Reductions over axes: sum, mean, max {axes=[] (all), keepdims=false}.
#include "ops/reduction.h"

#include <algorithm>
#include <xtensor/xreducer.hpp>

#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

namespace {

// Infers a reduction's result. max has no identity, so it rejects reducing an
// axis of size 0 (`needs_elements`).
InferFn reduction_infer(DTypes allowed, bool needs_elements) {
  return [allowed = std::move(allowed), needs_elements](const std::vector<TensorType>& in, const Attrs& attrs) {
    check_dtype(in[0], allowed, operand_role(0));
    const std::vector<int64_t> axes = normalize_axes(attrs.get_ints("axes"), in[0].rank(), true);
    const bool keepdims = attrs.get_bool("keepdims");
    Shape shape;
    for (int64_t d = 0; d < in[0].rank(); ++d) {
      const int64_t dim = in[0].shape[static_cast<size_t>(d)];
      const bool reduced = std::find(axes.begin(), axes.end(), d) != axes.end();
      if (reduced && needs_elements && dim == 0) {
        std::string msg = "cannot reduce axis ";
        msg += std::to_string(d);
        msg += " of size 0 (no identity)";
        throw Error(msg);
      }
      if (!reduced) shape.push_back(dim);
      else if (keepdims) shape.push_back(1);
    }
    return std::vector<TensorType>{{in[0].dtype, shape}};
  };
}

// The reduction axes of a node, normalized for xtensor.
std::vector<std::size_t> reduced_axes(const KernelArgs& k) {
  return xt_axes(normalize_axes(k.attrs.get_ints("axes"), static_cast<int64_t>(k.in[0]->shape().size()), true));
}

// Stores a reduction computed without keepdims as the result's element type and
// shape (which has the kept size-1 dims, if any).
template <class T, class E>
void store_reduced(Tensor& out, E&& reduced) {
  xt::xarray<T> a = xt::cast<T>(std::forward<E>(reduced));
  a.reshape(xt_shape(out.shape()));
  out = Tensor(std::move(a));
}

// Sums accumulate in double / int64, so the reference is at least as accurate
// as any compiled kernel it is compared with; i32 sums wrap like two's complement.
template <class T>
using Accumulator = std::conditional_t<std::is_same_v<T, float>, double, int64_t>;

void sum_kernel(const KernelArgs& k) {
  for_dtype<float, int32_t>(k.in[0]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    store_reduced<T>(*k.out[0], xt::sum<Accumulator<T>>(k.in[0]->as<T>(), reduced_axes(k)));
  });
}

void mean_kernel(const KernelArgs& k) {
  const Tensor& x = *k.in[0];
  const std::vector<std::size_t> axes = reduced_axes(k);
  double count = 1;
  for (std::size_t a : axes) count *= static_cast<double>(x.shape()[a]);
  store_reduced<float>(*k.out[0], xt::sum<double>(x.f32(), axes) / count);
}

void max_kernel(const KernelArgs& k) {
  for_dtype<float, int32_t>(k.in[0]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    store_reduced<T>(*k.out[0], xt::amax(k.in[0]->as<T>(), reduced_axes(k)));
  });
}

std::vector<AttrSpec> reduction_attrs() {
  return {optional_attr("axes", std::vector<int64_t>{}), optional_attr("keepdims", false)};
}

Value reduce(Builder& b, const char* op, Value x, std::vector<int64_t> axes, bool keepdims) {
  return b.emit1(op, {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
}

}  // namespace

void register_reductions(OpRegistry& r) {
  r.add(OpDef{"sum", "sum over {axes} (all if empty), keeping them as size 1 if {keepdims}", 1, 1, reduction_attrs(),
              reduction_infer(kNumeric, false), sum_kernel, {}, false});
  r.add(OpDef{"mean", "mean over {axes} (all if empty), keeping them as size 1 if {keepdims}", 1, 1,
              reduction_attrs(), reduction_infer(kFloat, false), mean_kernel, {}, false});
  r.add(OpDef{"max", "max over {axes} (all if empty), keeping them as size 1 if {keepdims}", 1, 1, reduction_attrs(),
              reduction_infer(kNumeric, true), max_kernel, {}, false});
}

Value sum(Builder& b, Value x, std::vector<int64_t> axes, bool keepdims) {
  return reduce(b, "sum", x, std::move(axes), keepdims);
}
Value mean(Builder& b, Value x, std::vector<int64_t> axes, bool keepdims) {
  return reduce(b, "mean", x, std::move(axes), keepdims);
}
Value max(Builder& b, Value x, std::vector<int64_t> axes, bool keepdims) {
  return reduce(b, "max", x, std::move(axes), keepdims);
}

}  // namespace kiln::ops
