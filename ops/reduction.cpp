// Reductions over axes: sum, mean, max {axes=[] (all), keepdims=false}.
#include "ops/reduction.h"

#include <algorithm>
#include <limits>
#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>

#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/families.h"
#include "ops/op_helpers.h"
#include "ops/shape_ops.h"

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

// An operand without elements: xtensor's reducers step outside it (UBSan reports
// the pointer arithmetic), so the result is written directly, every element
// `value` (a sum of nothing is 0, a mean 0 / 0; max rejects reducing nothing, so
// its result then has no elements). Returns whether the operand was empty.
bool fill_if_empty(const KernelArgs& k, double value) {
  if (k.in[0]->numel() != 0) return false;
  k.out[0]->visit([&](auto& a) { a.fill(static_cast<typename std::decay_t<decltype(a)>::value_type>(value)); });
  return true;
}

void sum_kernel(const KernelArgs& k) {
  if (fill_if_empty(k, 0)) return;
  for_dtype<float, int32_t>(k.in[0]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    store_reduced<T>(*k.out[0], xt::sum<Accumulator<T>>(k.in[0]->as<T>(), reduced_axes(k)));
  });
}

void mean_kernel(const KernelArgs& k) {
  if (fill_if_empty(k, std::numeric_limits<double>::quiet_NaN())) return;
  const Tensor& x = *k.in[0];
  const std::vector<std::size_t> axes = reduced_axes(k);
  double count = 1;
  for (std::size_t a : axes) count *= static_cast<double>(x.shape()[a]);
  store_reduced<float>(*k.out[0], xt::sum<double>(x.f32(), axes) / count);
}

// A nan anywhere in a reduced line makes its max nan, as in NumPy (xt::amax alone
// keeps or drops a nan depending on where in the line it is), and a max over -inf
// alone (a fully masked row) is -inf (xt::amax starts from -FLT_MAX), as the JIT's.
void max_kernel(const KernelArgs& k) {
  if (fill_if_empty(k, 0)) return;
  const std::vector<std::size_t> axes = reduced_axes(k);
  if (k.in[0]->dtype() == DType::i32) return store_reduced<int32_t>(*k.out[0], xt::amax(k.in[0]->i32(), axes));
  const Tensor::F32& x = k.in[0]->f32();
  const auto max_from_minus_inf = xt::make_xreducer_functor(
      xt::math::maximum<void>(), xt::const_value<float>(-std::numeric_limits<float>::infinity()));
  const auto has_nan = xt::sum<int64_t>(xt::cast<int64_t>(xt::isnan(x)), axes) > 0;
  store_reduced<float>(*k.out[0], xt::where(has_nan, std::numeric_limits<float>::quiet_NaN(),
                                            xt::reduce(max_from_minus_inf, x, axes)));
}

// ---- gradient rules ----
// Written with differentiable builder ops only, so that grad of grad works.

// What a gradient rule needs to know about a reduction node.
struct Reduction {
  Shape x_shape;
  std::vector<int64_t> axes;  // normalized, ascending
  Shape kept_shape;  // x_shape with the reduced axes as size 1 (the keepdims result)
  double count = 1;  // elements reduced into each result element
};

Reduction reduction_of(Builder& b, const Node& n) {
  Reduction r;
  r.x_shape = b.type(n.operands[0]).shape;
  r.axes = normalize_axes(n.attrs.get_ints("axes"), static_cast<int64_t>(r.x_shape.size()), true);
  r.kept_shape = r.x_shape;
  for (int64_t a : r.axes) {
    r.count *= static_cast<double>(r.x_shape[static_cast<size_t>(a)]);
    r.kept_shape[static_cast<size_t>(a)] = 1;
  }
  return r;
}

// A result-shaped value reshaped to the keepdims shape, so it broadcasts against x.
Value to_kept_shape(Builder& b, Value v, const Reduction& r) {
  return b.type(v).shape == r.kept_shape ? v : reshape(b, v, r.kept_shape);
}

// A keepdims-shaped gradient broadcast back over the reduced axes.
Value broadcast_to_operand(Builder& b, Value kept_grad, const Reduction& r) {
  return b.type(kept_grad).shape == r.x_shape ? kept_grad : broadcast(b, kept_grad, r.x_shape);
}

std::vector<Value> sum_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  const Reduction r = reduction_of(b, n);
  return {broadcast_to_operand(b, to_kept_shape(b, dy[0], r), r)};
}

std::vector<Value> mean_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  const Reduction r = reduction_of(b, n);
  return {broadcast_to_operand(b, div(b, to_kept_shape(b, dy[0], r), fill(b, Shape{}, r.count)), r)};
}

// The gradient is divided equally among all positions equal to the max, so a
// tie of k elements gives each dy / k (the subgradient that keeps max(x, x, ...)
// symmetric and sums to dy).
std::vector<Value> max_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  const Reduction r = reduction_of(b, n);
  const Value is_max = cast(b, equal(b, n.operands[0], to_kept_shape(b, n.results[0], r)), DType::f32);
  const Value ties = sum(b, is_max, r.axes, true);
  return {mul(b, is_max, div(b, to_kept_shape(b, dy[0], r), ties))};
}

std::vector<AttrSpec> reduction_attrs() {
  return {optional_attr("axes", std::vector<int64_t>{}), optional_attr("keepdims", false)};
}

Value reduce(Builder& b, const char* op, Value x, std::vector<int64_t> axes, bool keepdims) {
  return b.emit1(op, {x}, {{"axes", std::move(axes)}, {"keepdims", keepdims}});
}

}  // namespace

void register_reductions(OpRegistry& r) {
  r.add(OpDef{.name = "sum",
              .summary = "sum over {axes} (all if empty), keeping them as size 1 if {keepdims}",
              .min_operands = 1,
              .max_operands = 1,
              .attrs = reduction_attrs(),
              .infer = reduction_infer(kNumeric, false),
              .reference = sum_kernel,
              .gradient = sum_grad,
              .reduction = true,
              .lowering = Lowering::fuses_producers});
  r.add(OpDef{.name = "mean",
              .summary = "mean over {axes} (all if empty), keeping them as size 1 if {keepdims}",
              .min_operands = 1,
              .max_operands = 1,
              .attrs = reduction_attrs(),
              .infer = reduction_infer(kFloat, false),
              .reference = mean_kernel,
              .gradient = mean_grad,
              .reduction = true,
              .lowering = Lowering::fuses_producers});
  r.add(OpDef{.name = "max",
              .summary = "max over {axes} (all if empty; nan if any is), keeping them as size 1 if {keepdims}",
              .min_operands = 1,
              .max_operands = 1,
              .attrs = reduction_attrs(),
              .infer = reduction_infer(kNumeric, true),
              .reference = max_kernel,
              .gradient = max_grad,
              .reduction = true,
              .lowering = Lowering::fuses_producers});
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
