// Finite-difference checks of whole models, and a second-order check.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

using namespace kiln;
using kiln::test::check_gradients;
using kiln::test::random_tensor;

namespace {

// logits of a two-layer perceptron: act(x @ w1 + b1) @ w2 + b2
Value mlp_logits(Builder& b, Value x, Value w1, Value b1, Value w2, Value b2, bool use_tanh) {
  const Value pre = ops::add(b, ops::matmul(b, x, w1), b1);
  const Value h = use_tanh ? ops::tanh(b, pre) : ops::relu(b, pre);
  return ops::add(b, ops::matmul(b, h, w2), b2);
}

// Causal multi-head self-attention with a residual and layer_norm, as in
// examples/attention.kir: x is [batch, seq, d], heads split d.
Value attention_block(Builder& b, const std::vector<Value>& in, int64_t heads) {
  const Value x = in[0], wq = in[1], wk = in[2], wv = in[3], wo = in[4], gamma = in[5], beta = in[6];
  const Shape& s = b.type(x).shape;
  const int64_t batch = s[0], seq = s[1], d = s[2], dh = d / heads;
  auto split = [&](Value w) {
    return ops::transpose(b, ops::reshape(b, ops::matmul(b, x, w), {batch, seq, heads, dh}), {0, 2, 1, 3});
  };
  const Value q = split(wq), k = split(wk), v = split(wv);
  const Value scores = ops::add(b, ops::mul(b, ops::matmul(b, q, k, false, true), ops::fill(b, {}, 1.0 / std::sqrt(dh))),
                                ops::causal_mask(b, seq));
  const Value ctx = ops::matmul(b, ops::softmax(b, scores), v);
  const Value merged = ops::reshape(b, ops::transpose(b, ctx, {0, 2, 1, 3}), {batch, seq, d});
  return ops::layer_norm(b, ops::add(b, x, ops::matmul(b, merged, wo)), gamma, beta);
}

}  // namespace

TEST_CASE("MLP with relu and cross-entropy matches finite differences") {
  check_gradients(
      [](Builder& b, const std::vector<Value>& in) {
        return ops::cross_entropy(b, mlp_logits(b, in[0], in[1], in[2], in[3], in[4], false), in[5], 0.1);
      },
      {random_tensor({4, 5}, 1), random_tensor({5, 6}, 2), random_tensor({6}, 3), random_tensor({6, 3}, 4),
       random_tensor({3}, 5), Tensor(Tensor::I32{0, 2, 1, 2})});
}

TEST_CASE("attention block matches finite differences") {
  std::vector<Tensor> in = {random_tensor({2, 4, 8}, 11)};
  for (uint64_t i = 0; i < 4; ++i) in.push_back(random_tensor({8, 8}, 12 + i, -0.5f, 0.5f));
  in.push_back(random_tensor({8}, 20, 0.5f, 1.5f));
  in.push_back(random_tensor({8}, 21));
  check_gradients([](Builder& b, const std::vector<Value>& v) { return attention_block(b, v, 2); }, in);
}

TEST_CASE("Hessian-vector product of a small MLP matches differences of its gradient") {
  // loss(w) for w = the first-layer weights; Hv = d/dw <grad loss(w), v>.
  const Tensor x = random_tensor({4, 3}, 31), w = random_tensor({3, 5}, 32), v = random_tensor({3, 5}, 33);
  const Tensor b1 = random_tensor({5}, 34), w2 = random_tensor({5, 2}, 35), b2 = random_tensor({2}, 36);
  const Tensor labels(Tensor::I32{0, 1, 1, 0});

  Graph g("hvp");
  Builder b(g);
  const Value xv = b.input("x", x.type()), wv = b.input("w", w.type()), vv = b.input("v", v.type());
  const Value b1v = b.input("b1", b1.type()), w2v = b.input("w2", w2.type()), b2v = b.input("b2", b2.type());
  const Value lv = b.input("labels", labels.type());
  const Value loss = ops::cross_entropy(b, mlp_logits(b, xv, wv, b1v, w2v, b2v, true), lv);
  const Value gw = grad(g, loss, {wv})[0];
  const Value hv = grad(g, ops::sum(b, ops::mul(b, gw, vv)), {wv})[0];
  b.output(gw);
  b.output(hv);

  Interpreter exe(g);
  auto run_at = [&](const Tensor& w_at) {
    for (auto [name, t] : std::vector<std::pair<const char*, const Tensor*>>{
             {"x", &x}, {"v", &v}, {"b1", &b1}, {"w2", &w2}, {"b2", &b2}, {"labels", &labels}})
      exe.bind(name, *t);
    exe.bind("w", w_at);
    exe.run();
  };
  run_at(w);
  const Tensor::F32 analytic = exe.output(g.name_of(hv)).f32();
  const float h = 1e-2f;
  run_at(Tensor(Tensor::F32(w.f32() + h * v.f32())));
  const Tensor::F32 g_plus = exe.output(g.name_of(gw)).f32();
  run_at(Tensor(Tensor::F32(w.f32() - h * v.f32())));
  const Tensor::F32 g_minus = exe.output(g.name_of(gw)).f32();
  const Tensor::F32 numeric = (g_plus - g_minus) / (2 * h);
  for (size_t i = 0; i < analytic.size(); ++i) {
    INFO("element ", i, ": analytic ", analytic.flat(i), ", numeric ", numeric.flat(i));
    CHECK(std::abs(analytic.flat(i) - numeric.flat(i)) <= 2e-3f + 2e-2f * std::abs(numeric.flat(i)));
  }
}
