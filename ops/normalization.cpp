// Normalizations: softmax, log_softmax {axis=-1}, layer_norm {eps=1e-5}.
#include "ops/normalization.h"

#include <limits>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>

#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/families.h"
#include "ops/grad_util.h"
#include "ops/op_helpers.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

namespace kiln::ops {

namespace {

std::vector<TensorType> infer_softmax(const std::vector<TensorType>& in, const Attrs& attrs) {
  check_dtype(in[0], kFloat, operand_role(0));
  normalize_axis(attrs.get_int("axis"), in[0].rank());
  return {in[0]};
}

std::size_t softmax_axis(const KernelArgs& k) {
  return static_cast<std::size_t>(
      normalize_axis(k.attrs.get_int("axis"), static_cast<int64_t>(k.in[0]->shape().size())));
}

// Statistics along one axis, kept as a size-1 dim. They are evaluated into
// arrays: xtensor 0.24's lazy keep_dims reducers give wrong values when broadcast
// against the full array (softmax of [1,2,3] came out as [0.09, 0.27, 1]).
// Sums in double, rounded once: an f32 accumulator drops terms below 2^-24 of its
// total (a softmax of one large logit among 2^20 small ones was 6% off).
template <class T>
xt::xarray<T> sum_along(const xt::xarray<T>& x, std::size_t axis) {
  const xt::xarray<double> sum = xt::sum<double>(x, {axis}, xt::keep_dims);
  return xt::cast<T>(sum);
}
template <class T>
xt::xarray<T> max_along(const xt::xarray<T>& x, std::size_t axis) {
  return xt::xarray<T>(xt::amax(x, {axis}, xt::keep_dims));
}
template <class T>
xt::xarray<T> mean_along(const xt::xarray<T>& x, std::size_t axis) {
  return xt::xarray<T>(xt::mean(x, {axis}, xt::keep_dims));
}

// x minus its max along `axis`: every entry <= 0, so exp cannot overflow. A line
// of -inf (a fully masked attention row) is shifted by 0 instead, so it stays -inf
// rather than becoming -inf - -inf = nan.
xt::xarray<float> shifted_by_max(const xt::xarray<float>& x, std::size_t axis) {
  const xt::xarray<float> max = max_along(x, axis);
  return x - xt::where(xt::equal(max, -std::numeric_limits<float>::infinity()), 0.0f, max);
}

// A fully masked line has nothing to weigh: its softmax is 0 (its exps sum to 0,
// and 0 / 0 would be nan), its log_softmax -inf.
void softmax_kernel(const KernelArgs& k) {
  const std::size_t axis = softmax_axis(k);
  const xt::xarray<float> e = xt::exp(shifted_by_max(k.in[0]->f32(), axis));
  const xt::xarray<float> total = sum_along(e, axis);
  store(*k.out[0], e / xt::where(xt::equal(total, 0.0f), 1.0f, total));
}

void log_softmax_kernel(const KernelArgs& k) {
  const std::size_t axis = softmax_axis(k);
  const xt::xarray<float> s = shifted_by_max(k.in[0]->f32(), axis);
  const xt::xarray<float> total = sum_along(xt::xarray<float>(xt::exp(s)), axis);
  store(*k.out[0], s - xt::log(xt::where(xt::equal(total, 0.0f), 1.0f, total)));
}

std::vector<TensorType> infer_layer_norm(const std::vector<TensorType>& in, const Attrs&) {
  const TensorType& x = in[0];
  check_dtype(x, kFloat, "x (operand 0)");
  check_min_rank(x, 1, "x (operand 0)");
  const TensorType want{DType::f32, {x.shape.back()}};
  for (const auto& [i, role] : {std::pair{1, "gamma (operand 1)"}, std::pair{2, "beta (operand 2)"}}) {
    if (in[static_cast<size_t>(i)] == want) continue;
    std::string msg = role;
    msg += " must be ";
    msg += type_str(want);
    msg += " (x's last dim), got ";
    msg += type_str(in[static_cast<size_t>(i)]);
    throw Error(msg);
  }
  const TensorType row_stat{DType::f32, Shape(x.shape.begin(), x.shape.end() - 1)};
  return {x, row_stat, row_stat};
}

// Computed in double, so the reference is at least as accurate as compiled code.
void layer_norm_kernel(const KernelArgs& k) {
  const xt::xarray<double> x = xt::cast<double>(k.in[0]->f32());
  const xt::xarray<double> gamma = xt::cast<double>(k.in[1]->f32());
  const xt::xarray<double> beta = xt::cast<double>(k.in[2]->f32());
  const double eps = k.attrs.get_float("eps");
  const std::size_t axis = x.dimension() - 1;
  const xt::xarray<double> mean = mean_along(x, axis);
  const xt::xarray<double> centered = x - mean;
  const xt::xarray<double> root = xt::sqrt(mean_along<double>(centered * centered, axis) + eps);
  store(*k.out[0], xt::cast<float>(centered / root * gamma + beta));
  const auto row_shape = xt_shape(k.out[1]->shape());
  store(*k.out[1], xt::cast<float>(xt::reshape_view(mean, row_shape)));
  store(*k.out[2], xt::cast<float>(xt::reshape_view(xt::xarray<double>(1.0 / root), row_shape)));
}

// ---- gradient rules ----
// Written with differentiable builder ops only, so that grad of grad works.

// The general rule dx = y * (dy - sum(dy * y)), right for any dy: it does not
// assume a cross-entropy follows.
std::vector<Value> softmax_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  const int64_t axis = n.attrs.get_int("axis");
  const Value y = n.results[0];
  const Value dot = sum(b, mul(b, dy[0], y), {axis}, true);
  return {mul(b, y, sub(b, dy[0], dot))};
}

// dx = dy - softmax(x) * sum(dy), with softmax(x) = exp(y).
std::vector<Value> log_softmax_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  const int64_t axis = n.attrs.get_int("axis");
  return {sub(b, dy[0], mul(b, exp(b, n.results[0]), sum(b, dy[0], {axis}, true)))};
}

// With xhat = (x - mean) * rstd over the last axis and g = dy * gamma:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
//   dgamma = sum of dy * xhat and dbeta = sum of dy over the leading dims,
// from the forward's saved mean and rstd (as llm.c's layernorm_backward), made
// [..., 1] to broadcast over the row. Gradients of the mean and rstd results add
// dmean / D and -drstd * rstd^2 * xhat / D to dx (d var / dx = 2 (x - mean) / D).
std::vector<Value> layer_norm_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  const Value x = n.operands[0], gamma = n.operands[1];
  const Shape& param_shape = b.type(gamma).shape;
  Shape kept = b.type(x).shape;
  const Value per_element = fill(b, {}, 1.0 / static_cast<double>(kept.back()));
  kept.back() = 1;
  const Value mean_kept = reshape(b, n.results[1], kept), rstd = reshape(b, n.results[2], kept);
  const Value xhat = mul(b, sub(b, x, mean_kept), rstd);
  Value dx, dgamma, dbeta;
  const auto accumulate = [&](Value term) { dx = dx.valid() ? add(b, dx, term) : term; };
  if (dy[0].valid()) {
    const Value g = mul(b, dy[0], gamma);
    const Value g_centered = sub(b, g, mean(b, g, {-1}, true));
    accumulate(mul(b, rstd, sub(b, g_centered, mul(b, xhat, mean(b, mul(b, g, xhat), {-1}, true)))));
    dgamma = sum_to_shape(b, mul(b, dy[0], xhat), param_shape);
    dbeta = sum_to_shape(b, dy[0], param_shape);
  }
  if (dy[1].valid()) accumulate(mul(b, reshape(b, dy[1], kept), per_element));
  if (dy[2].valid())
    accumulate(neg(b, mul(b, mul(b, reshape(b, dy[2], kept), mul(b, rstd, rstd)), mul(b, xhat, per_element))));
  return {dx, dgamma, dbeta};
}

}  // namespace

void register_normalization(OpRegistry& r) {
  r.add(OpDef{.name = "softmax",
              .summary = "exp(x) / sum(exp(x)) along {axis}, max-shifted for stability",
              .min_operands = 1,
              .max_operands = 1,
              .attrs = {optional_attr("axis", int64_t{-1})},
              .infer = infer_softmax,
              .reference = softmax_kernel,
              .gradient = softmax_grad,
              .lowering = Lowering::fuses_producers});
  r.add(OpDef{.name = "log_softmax",
              .summary = "x - log(sum(exp(x))) along {axis}, max-shifted for stability",
              .min_operands = 1,
              .max_operands = 1,
              .attrs = {optional_attr("axis", int64_t{-1})},
              .infer = infer_softmax,
              .reference = log_softmax_kernel,
              .gradient = log_softmax_grad,
              .lowering = Lowering::fuses_producers});
  r.add(OpDef{
      .name = "layer_norm",
      .summary = "(x - mean) * rstd * gamma + beta over the last axis; results y, mean, rstd = 1/sqrt(var + eps)",
      .min_operands = 3,
      .max_operands = 3,
      .attrs = {optional_attr("eps", 1e-5)},
      .infer = infer_layer_norm,
      .reference = layer_norm_kernel,
      .gradient = layer_norm_grad,
      .lowering = Lowering::fuses_producers});
}

Value softmax(Builder& b, Value x, int64_t axis) { return b.emit1("softmax", {x}, {{"axis", axis}}); }
Value log_softmax(Builder& b, Value x, int64_t axis) { return b.emit1("log_softmax", {x}, {{"axis", axis}}); }
Value layer_norm(Builder& b, Value x, Value gamma, Value beta, double eps) {
  return b.emit("layer_norm", {x, gamma, beta}, {{"eps", eps}})[0];
}

}  // namespace kiln::ops
