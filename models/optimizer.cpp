#include "models/optimizer.h"

#include <cmath>
#include <functional>

#include "engine/autodiff.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "ops/assign.h"
#include "ops/collective.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/identity.h"

namespace kiln {
namespace {

Value scalar(Builder& b, double v) { return ops::fill(b, {}, v); }

std::vector<Value> trainable_params(const Graph& g) {
  std::vector<Value> params = g.declarations(ValueKind::param);
  if (params.empty()) throw Error("optimizer: graph @" + g.name() + " has no params to train");
  for (const Node& n : g.nodes())
    if (n.def->side_effect && g.value(n.operands[0]).kind == ValueKind::param)
      throw Error("optimizer: param %" + g.name_of(n.operands[0]) + " is already assigned by the graph");
  return params;
}

// The step counter: declares or finds %step, assigns step + 1, and returns the new
// step as f32 (1 on the first run).
Value advance_step(Builder& b) {
  Graph& g = b.graph();
  const auto existing = g.find(kStepState);
  const Value step = existing ? *existing : b.state(kStepState, {DType::i32, {}});
  if (g.value(step).kind != ValueKind::state || !(g.type(step) == TensorType{DType::i32, {}}))
    throw Error("optimizer: %" + kStepState + " must be a state of type i32[]");
  const Value next = ops::add(b, step, ops::fill(b, {}, 1.0, DType::i32));
  ops::assign(b, step, next);
  return ops::cast(b, next, DType::f32);
}

void output_once(Builder& b, Value v) {
  for (Value o : b.graph().outputs())
    if (o == v) return;
  b.output(v);
}

// Input %grad_weight, declared once.
Value grad_weight(Builder& b) {
  const auto existing = b.graph().find(kGradWeightInput);
  return existing ? *existing : b.input(kGradWeightInput, {DType::f32, {}});
}

// The gradients of a part of a batch: weighted by input %grad_weight (its share
// of the batch's target tokens) through the backward pass's seed, so each is
// ready where the backward pass makes it.
std::vector<Value> weighted_grads(Graph& g, Value loss, const std::vector<Value>& params) {
  Builder b(g);
  const Builder::Scope scope(b, kOptimizerScope);
  return grad(g, loss, params, grad_weight(b));
}

// A param's weighted gradient plus its accumulator state, which is assigned
// `next_acc(sum)`.
Value accumulated(Builder& b, Value param, Value weighted_grad, const std::function<Value(Value)>& next_acc) {
  Graph& g = b.graph();
  const Value acc = b.state(g.name_of(param) + kGradAccSuffix, g.type(param));
  const Value sum = ops::add(b, acc, weighted_grad);
  ops::assign(b, acc, next_acc(sum));
  return sum;
}

}  // namespace

void append_gradient_accumulation(Graph& g, Value loss) {
  const std::vector<Value> params = trainable_params(g);
  const std::vector<Value> grads = weighted_grads(g, loss, params);
  Builder b(g);
  const Builder::Scope scope(b, kOptimizerScope);
  for (size_t i = 0; i < params.size(); ++i) accumulated(b, params[i], grads[i], [](Value sum) { return sum; });
  output_once(b, loss);
}

void append_sgd(Graph& g, Value loss, const SgdOptions& opts) {
  const std::vector<Value> params = trainable_params(g);
  const std::vector<Value> grads = grad(g, loss, params);
  Builder b(g);
  const Builder::Scope scope(b, kOptimizerScope);
  advance_step(b);
  const Value lr = ops::identity(b, scalar(b, opts.lr), g.fresh_name(kLearningRateOutput));
  for (size_t i = 0; i < params.size(); ++i)
    ops::assign(b, params[i], ops::sub(b, params[i], ops::mul(b, lr, grads[i])));
  output_once(b, loss);
  output_once(b, lr);
}

void append_adam(Graph& g, Value loss, const AdamOptions& opts) {
  const std::vector<Value> params = trainable_params(g);
  Builder b(g);
  const Builder::Scope scope(b, kOptimizerScope);
  // The step, learning rate and bias corrections come before the gradients, so
  // that each param's update can run as soon as its gradient is made (fused
  // into the matmul that makes it: compiler/passes/fusion.cpp).
  const Value t = advance_step(b);
  Value lr;
  if (opts.constant_lr > 0) {
    lr = scalar(b, opts.constant_lr);
  } else {
    const double scale = opts.factor / std::sqrt(static_cast<double>(opts.d_model));
    const Value warm = ops::mul(b, t, scalar(b, std::pow(static_cast<double>(opts.warmup), -1.5)));
    lr = ops::mul(b, scalar(b, scale), ops::minimum(b, ops::rsqrt(b, t), warm));
  }
  lr = ops::identity(b, lr, g.fresh_name(kLearningRateOutput));
  // Bias corrections 1 - beta^t, with beta^t = exp(t * log(beta)).
  auto correction = [&](double beta) {
    return ops::sub(b, scalar(b, 1.0), ops::exp(b, ops::mul(b, t, scalar(b, std::log(beta)))));
  };
  const Value c1 = correction(opts.beta1);
  const Value c2 = correction(opts.beta2);
  const Value step_size = ops::div(b, lr, c1);  // lr / (1 - beta1^t)
  // One node per constant for all params: every node is a kernel the JIT compiles.
  const Value beta1 = scalar(b, opts.beta1), one_minus_beta1 = scalar(b, 1 - opts.beta1);
  const Value beta2 = scalar(b, opts.beta2), one_minus_beta2 = scalar(b, 1 - opts.beta2);
  const Value eps = scalar(b, opts.eps);

  std::vector<Value> grads =
      opts.update_freq > 1 || opts.allreduce ? weighted_grads(g, loss, params) : grad(g, loss, params);
  if (opts.update_freq > 1)
    for (size_t i = 0; i < params.size(); ++i)
      grads[i] = accumulated(b, params[i], grads[i], [&](Value) { return ops::fill(b, g.type(params[i]).shape, 0.0); });
  // One allreduce per gradient, in order; the allreduce-buckets pass groups them.
  if (opts.allreduce)
    for (Value& gp : grads) gp = ops::allreduce(b, gp);

  for (size_t i = 0; i < params.size(); ++i) {
    const Value p = params[i], gp = grads[i];
    const std::string& name = g.name_of(p);
    const TensorType& type = g.type(p);
    const Value m = b.state(name + ".adam_m", type);
    const Value v = b.state(name + ".adam_v", type);
    const Value m_new = ops::add(b, ops::mul(b, beta1, m), ops::mul(b, one_minus_beta1, gp));
    const Value v_new = ops::add(b, ops::mul(b, beta2, v), ops::mul(b, one_minus_beta2, ops::mul(b, gp, gp)));
    // p -= lr * m_hat / (sqrt(v_hat) + eps), with m_hat = m / c1 and v_hat = v / c2.
    const Value denom = ops::add(b, ops::sqrt(b, ops::div(b, v_new, c2)), eps);
    const Value p_new = ops::sub(b, p, ops::mul(b, step_size, ops::div(b, m_new, denom)));
    ops::assign(b, m, m_new);
    ops::assign(b, v, v_new);
    ops::assign(b, p, p_new);
  }
  output_once(b, loss);
  output_once(b, lr);
}

}  // namespace kiln
