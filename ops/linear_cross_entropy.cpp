// linear_cross_entropy(h, w, labels) {smoothing, ignore_index} -> loss, lse and
// its gradient op linear_cross_entropy_backward(h, w, labels, lse, dloss) -> dh, dw:
// cross_entropy(matmul(h, w) {transpose_b}, labels) without the [N, V] logits
// (ops/loss.h); and linear_cross_entropy_train(h, w, labels, dloss) -> loss, dh,
// dw, the two at once, which a training step's pass makes of the pair when dloss
// does not depend on the loss (compiler/passes/linear_cross_entropy.cpp). The reference kernels compute the logits one row at a time, in
// double, as the unfused ops' references do.
#include <cmath>
#include <vector>

#include "ops/families.h"
#include "ops/loss.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

std::pair<Value, Value> linear_cross_entropy(Builder& b, Value h, Value w, Value labels, double smoothing,
                                             int64_t ignore_index) {
  const std::vector<Value> r =
      b.emit("linear_cross_entropy", {h, w, labels}, {{"smoothing", smoothing}, {"ignore_index", ignore_index}});
  return {r[0], r[1]};
}

namespace {

// Checks h [N, D], w [V, D] and labels [N]; returns N.
int64_t check_operands(const TensorType& h, const TensorType& w, const TensorType& labels) {
  check_dtype(h, kFloat, "h");
  check_dtype(w, kFloat, "w");
  check_dtype(labels, {DType::i32}, "labels");
  check_rank(h, 2, "h");
  check_rank(w, 2, "w");
  if (h.shape[1] != w.shape[1])
    throw Error("h [N, D] and w [V, D] must agree in D, got " + shape_str(h.shape) + " and " + shape_str(w.shape));
  if (w.shape[0] < 1) throw Error("w must have at least one class (row), got " + shape_str(w.shape));
  if (labels.shape != Shape{h.shape[0]})
    throw Error("labels must be [N] with h [N, D], got " + shape_str(labels.shape) + " with h " + shape_str(h.shape));
  return h.shape[0];
}

void check_smoothing(const Attrs& attrs) {
  const double smoothing = attrs.get_float("smoothing");
  if (!(smoothing >= 0.0 && smoothing <= 1.0))  // also rejects NaN
    throw Error(std::string("smoothing must be in [0, 1], got ").append(attr_str(smoothing)));
}

std::vector<TensorType> infer_forward(const std::vector<TensorType>& in, const Attrs& attrs) {
  const int64_t n = check_operands(in[0], in[1], in[2]);
  check_smoothing(attrs);
  return {{DType::f32, {}}, {DType::f32, {n}}};
}

void check_dloss(const TensorType& dloss) {
  check_dtype(dloss, kFloat, "dloss");
  if (!dloss.shape.empty()) throw Error("dloss must be a scalar f32[], got " + shape_str(dloss.shape));
}

std::vector<TensorType> infer_train(const std::vector<TensorType>& in, const Attrs& attrs) {
  check_operands(in[0], in[1], in[2]);
  check_smoothing(attrs);
  check_dloss(in[3]);
  return {{DType::f32, {}}, in[0], in[1]};
}

std::vector<TensorType> infer_backward(const std::vector<TensorType>& in, const Attrs& attrs) {
  const int64_t n = check_operands(in[0], in[1], in[2]);
  check_smoothing(attrs);
  check_dtype(in[3], kFloat, "lse");
  if (in[3].shape != Shape{n}) throw Error("lse must be [N] = " + shape_str({n}) + ", got " + shape_str(in[3].shape));
  check_dloss(in[4]);
  return {in[0], in[1]};
}

// The problem as the reference kernels see it.
struct Problem {
  const float* h;
  const float* w;
  const int32_t* labels;
  size_t n, d, v;
  double smoothing;
  int64_t ignore_index;

  explicit Problem(const KernelArgs& k)
      : h(k.in[0]->f32().data()),
        w(k.in[1]->f32().data()),
        labels(k.in[2]->i32().data()),
        n(k.in[0]->type().shape[0]),
        d(k.in[0]->type().shape[1]),
        v(k.in[1]->type().shape[0]),
        smoothing(k.attrs.get_float("smoothing")),
        ignore_index(k.attrs.get_int("ignore_index")) {}

  // Row i's logits, in double.
  void logits(size_t i, std::vector<double>& out) const {
    out.assign(v, 0.0);
    for (size_t j = 0; j < v; ++j) {
      double dot = 0.0;
      for (size_t c = 0; c < d; ++c) dot += static_cast<double>(h[i * d + c]) * w[j * d + c];
      out[j] = static_cast<float>(dot);  // the logits an f32 matmul would store
    }
  }

  // Whether row i counts; throws for a label outside [0, V) that is not ignore_index.
  bool kept(size_t i) const {
    const int32_t label = labels[i];
    if (label == ignore_index) return false;
    if (label < 0 || static_cast<size_t>(label) >= v)
      throw Error("linear_cross_entropy: label " + std::to_string(label) + " (at row " + std::to_string(i) +
                  ") is out of range [0, " + std::to_string(v) + ") and is not ignore_index " +
                  std::to_string(ignore_index));
    return true;
  }

  size_t kept_rows() const {
    size_t count = 0;
    for (size_t i = 0; i < n; ++i) count += kept(i) ? 1 : 0;
    return count;
  }
};

double log_sum_exp(const std::vector<double>& x) {
  double max = -INFINITY;
  for (double e : x) max = std::max(max, e);
  if (std::isinf(max)) return max;
  double sum = 0.0;
  for (double e : x) sum += std::exp(e - max);
  return max + std::log(sum);
}

void forward_kernel(const KernelArgs& k) {
  const Problem p(k);
  float* lse = k.out[1]->f32().data();
  std::vector<double> x;
  double total = 0.0;
  size_t kept = 0;
  for (size_t i = 0; i < p.n; ++i) {
    p.logits(i, x);
    const double row_lse = log_sum_exp(x);
    lse[i] = static_cast<float>(row_lse);
    if (!p.kept(i)) continue;
    double logp_sum = 0.0;
    for (double e : x) logp_sum += e - row_lse;
    total += -(1.0 - p.smoothing) * (x[static_cast<size_t>(p.labels[i])] - row_lse) -
             p.smoothing / static_cast<double>(p.v) * logp_sum;
    ++kept;
  }
  k.out[0]->f32()() = kept ? static_cast<float>(total / static_cast<double>(kept)) : 0.0f;
}

// g[i, j] = dloss * keep_i / count * (exp(x[i, j] - lse_i) - (1 - s) [j == label_i] - s / V),
// dh = g w, dw = g^T h (cross_entropy's gradient rule, then matmul's), into out_dh, out_dw.
void gradients(const KernelArgs& k, const float* lse, double dloss, Tensor& out_dh, Tensor& out_dw) {
  const Problem p(k);
  std::vector<double> dh(p.n * p.d, 0.0), dw(p.v * p.d, 0.0), x;
  const double coef = dloss / static_cast<double>(std::max<size_t>(p.kept_rows(), 1));
  for (size_t i = 0; i < p.n; ++i) {
    if (!p.kept(i)) continue;
    p.logits(i, x);
    for (size_t j = 0; j < p.v; ++j) {
      double g = std::exp(x[j] - lse[i]) - p.smoothing / static_cast<double>(p.v);
      if (static_cast<int64_t>(j) == p.labels[i]) g -= 1.0 - p.smoothing;
      g *= coef;
      for (size_t c = 0; c < p.d; ++c) {
        dh[i * p.d + c] += g * p.w[j * p.d + c];
        dw[j * p.d + c] += g * p.h[i * p.d + c];
      }
    }
  }
  for (size_t e = 0; e < dh.size(); ++e) out_dh.f32().data()[e] = static_cast<float>(dh[e]);
  for (size_t e = 0; e < dw.size(); ++e) out_dw.f32().data()[e] = static_cast<float>(dw[e]);
}

void backward_kernel(const KernelArgs& k) {
  gradients(k, k.in[3]->f32().data(), k.in[4]->f32()(), *k.out[0], *k.out[1]);
}

// The forward's loss (and its lse, kept in a tensor of its own), then the gradients.
void train_kernel(const KernelArgs& k) {
  Tensor lse = Tensor::zeros({DType::f32, {k.in[0]->type().shape[0]}});
  std::vector<Tensor*> forward_out = {k.out[0], &lse};
  forward_kernel(KernelArgs{k.in, forward_out, k.attrs});
  gradients(k, lse.f32().data(), k.in[3]->f32()(), *k.out[1], *k.out[2]);
}

std::vector<Value> forward_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  if (dy[1].valid()) throw Error("linear_cross_entropy: lse (result 1) has no gradient rule");
  if (!dy[0].valid()) return {Value(), Value(), Value()};
  const std::vector<Value> d = b.emit(
      "linear_cross_entropy_backward", {n.operands[0], n.operands[1], n.operands[2], n.results[1], dy[0]}, n.attrs);
  return {d[0], d[1], Value()};
}

}  // namespace

void register_linear_cross_entropy(OpRegistry& r) {
  const std::vector<AttrSpec> attrs = {optional_attr("smoothing", 0.0), optional_attr("ignore_index", int64_t{-100})};
  r.add(OpDef{.name = "linear_cross_entropy",
              .summary = "cross_entropy(matmul(h, w) {transpose_b}, labels) without the [N, V] logits in memory; "
                         "results loss, lse (row log-sum-exp)",
              .min_operands = 3,
              .max_operands = 3,
              .attrs = attrs,
              .infer = infer_forward,
              .reference = forward_kernel,
              .gradient = forward_grad,
              .lowering = Lowering::reads_memory});
  r.add(OpDef{.name = "linear_cross_entropy_backward",
              .summary = "dh, dw of linear_cross_entropy from h, w, labels, lse and dloss (logits recomputed "
                         "block by block)",
              .min_operands = 5,
              .max_operands = 5,
              .attrs = attrs,
              .infer = infer_backward,
              .reference = backward_kernel,
              .lowering = Lowering::reads_memory});
  r.add(OpDef{.name = "linear_cross_entropy_train",
              .summary = "linear_cross_entropy and its gradient in one: loss, dh, dw from h, w, labels and dloss "
                         "(the logits made once)",
              .min_operands = 4,
              .max_operands = 4,
              .attrs = attrs,
              .infer = infer_train,
              .reference = train_kernel,
              .lowering = Lowering::reads_memory});
}

}  // namespace kiln::ops
