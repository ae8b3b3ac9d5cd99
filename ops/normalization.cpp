// Normalizations: softmax, log_softmax {axis=-1}, layer_norm {eps=1e-5}.
#include "ops/normalization.h"

#include <xtensor/xmath.hpp>
#include <xtensor/xreducer.hpp>

#include "ops/families.h"
#include "ops/op_helpers.h"

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
template <class T>
xt::xarray<T> sum_along(const xt::xarray<T>& x, std::size_t axis) {
  return xt::xarray<T>(xt::sum(x, {axis}, xt::keep_dims));
}
template <class T>
xt::xarray<T> max_along(const xt::xarray<T>& x, std::size_t axis) {
  return xt::xarray<T>(xt::amax(x, {axis}, xt::keep_dims));
}
template <class T>
xt::xarray<T> mean_along(const xt::xarray<T>& x, std::size_t axis) {
  return xt::xarray<T>(xt::mean(x, {axis}, xt::keep_dims));
}

// x minus its max along `axis`: every entry <= 0, so exp cannot overflow.
xt::xarray<float> shifted_by_max(const xt::xarray<float>& x, std::size_t axis) { return x - max_along(x, axis); }

void softmax_kernel(const KernelArgs& k) {
  const std::size_t axis = softmax_axis(k);
  const xt::xarray<float> e = xt::exp(shifted_by_max(k.in[0]->f32(), axis));
  store(*k.out[0], e / sum_along(e, axis));
}

void log_softmax_kernel(const KernelArgs& k) {
  const std::size_t axis = softmax_axis(k);
  const xt::xarray<float> s = shifted_by_max(k.in[0]->f32(), axis);
  const xt::xarray<float> e = xt::exp(s);
  store(*k.out[0], s - xt::log(sum_along(e, axis)));
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
  return {x};
}

// Computed in double, so the reference is at least as accurate as compiled code.
void layer_norm_kernel(const KernelArgs& k) {
  const xt::xarray<double> x = xt::cast<double>(k.in[0]->f32());
  const xt::xarray<double> gamma = xt::cast<double>(k.in[1]->f32());
  const xt::xarray<double> beta = xt::cast<double>(k.in[2]->f32());
  const double eps = k.attrs.get_float("eps");
  const std::size_t axis = x.dimension() - 1;
  const xt::xarray<double> centered = x - mean_along(x, axis);
  const xt::xarray<double> var = mean_along<double>(centered * centered, axis);
  store(*k.out[0], xt::cast<float>(centered / xt::sqrt(var + eps) * gamma + beta));
}

}  // namespace

void register_normalization(OpRegistry& r) {
  r.add(OpDef{"softmax", "exp(x) / sum(exp(x)) along {axis}, max-shifted for stability", 1, 1,
              {optional_attr("axis", int64_t{-1})}, infer_softmax, softmax_kernel, {}, false});
  r.add(OpDef{"log_softmax", "x - log(sum(exp(x))) along {axis}, max-shifted for stability", 1, 1,
              {optional_attr("axis", int64_t{-1})}, infer_softmax, log_softmax_kernel, {}, false});
  r.add(OpDef{"layer_norm", "(x - mean) / sqrt(var + eps) * gamma + beta over the last axis", 3, 3,
              {optional_attr("eps", 1e-5)}, infer_layer_norm, layer_norm_kernel, {}, false});
}

Value softmax(Builder& b, Value x, int64_t axis) { return b.emit1("softmax", {x}, {{"axis", axis}}); }
Value log_softmax(Builder& b, Value x, int64_t axis) { return b.emit1("log_softmax", {x}, {{"axis", axis}}); }
Value layer_norm(Builder& b, Value x, Value gamma, Value beta, double eps) {
  return b.emit1("layer_norm", {x, gamma, beta}, {{"eps", eps}});
}

}  // namespace kiln::ops
