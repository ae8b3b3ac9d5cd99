// The tiny Transformer's gradients (autodiff's backward graph of the whole
// model and its label-smoothed loss) against central finite differences of the
// loss, on the interpreter.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;

namespace {

// Entries per param, chosen among the largest gradients (a near-zero gradient
// would pass any absolute tolerance and prove nothing).
const std::vector<std::pair<std::string, int>> kSampled = {
    {"embed", 3},          {"enc.0.self_attn.wq", 2}, {"enc.0.self_attn.bv", 1},  {"enc.1.ln1.gamma", 2},
    {"enc.0.ffn.b1", 2},   {"enc.1.ffn.w2", 1},       {"dec.0.self_attn.wk", 2},  {"dec.0.cross_attn.wv", 2},
    {"dec.1.ln3.beta", 1}, {"dec.1.ffn.w1", 2},       {"dec.0.cross_attn.bo", 1}, {"dec.1.ln2.gamma", 1},
};

// Step and tolerances. The loss (|L| ~ 3) comes out of a few hundred f32 ops, so
// it carries a rounding error of a few ulp, up to ~1e-6; the fourth-order stencil
//   (8 (L(h) - L(-h)) - (L(2h) - L(-2h))) / (12 h)
// turns that into a gradient error of ~1.3e-6 / h and leaves O(h^4) truncation.
// h = 3e-3 balances the two (and keeps a ReLU kink within 2h of a pre-activation
// unlikely): the errors measured are at most 0.8% relative, 1.5e-3 absolute on
// gradients of 0.4. The check is the project's rtol 2e-2 (tests/autodiff/gradcheck.h)
// plus atol 2e-4, with every sampled gradient at least 20 * atol so that the
// comparison has teeth; a wrong backward rule is off by O(1) relative.
constexpr float kStep = 3e-3f, kAtol = 2e-4f, kRtol = 2e-2f;

void check_tiny_gradients(double dropout, bool training) {
  const TransformerConfig cfg = test::tiny_config(16, dropout);
  Graph g = build_loss_graph(cfg, 2, 5, 5, training);
  std::vector<Value> wrt;
  for (const auto& [name, count] : kSampled) wrt.push_back(*g.find(name));
  const std::vector<Value> grads = grad(g, *g.find("loss"), wrt);
  Builder b(g);
  for (Value v : grads) b.output(v);

  Interpreter exe(std::move(g));
  test::bind_batch(exe, test::sample_batch(5));
  if (training) exe.bind("step", Tensor(Tensor::I32(3)));  // a fixed step: fixed dropout masks
  bind_initial_values(exe, 11);
  exe.run();
  std::vector<Tensor::F32> analytic;  // copied now: the runs below overwrite the outputs
  for (const auto& [name, count] : kSampled) analytic.push_back(exe.output(name + ".grad").f32());

  auto loss_with = [&](const std::string& name, size_t i, float delta) {
    Tensor t = exe.binding(name);
    const float saved = t.f32().flat(i);
    t.f32().flat(i) = saved + delta;
    exe.bind(name, t);
    exe.run();
    const float loss = exe.output("loss").f32()();
    t.f32().flat(i) = saved;
    exe.bind(name, t);
    return loss;
  };
  for (size_t k = 0; k < kSampled.size(); ++k) {
    const std::string& name = kSampled[k].first;
    const Tensor::F32& grad_k = analytic[k];
    std::vector<size_t> order(grad_k.size());
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + kSampled[k].second, order.end(),
                      [&](size_t a, size_t c) { return std::abs(grad_k.flat(a)) > std::abs(grad_k.flat(c)); });
    for (int j = 0; j < kSampled[k].second; ++j) {
      const size_t i = order[static_cast<size_t>(j)];
      const float near = loss_with(name, i, kStep) - loss_with(name, i, -kStep);
      const float far = loss_with(name, i, 2 * kStep) - loss_with(name, i, -2 * kStep);
      const float numeric = (8 * near - far) / (12 * kStep);
      const float an = grad_k.flat(i);
      INFO(name, "[", i, "]: analytic ", an, ", numeric ", numeric);
      CHECK(std::abs(an) > 20 * kAtol);
      CHECK(std::abs(an - numeric) <= kAtol + kRtol * std::max(std::abs(an), std::abs(numeric)));
    }
  }
}

}  // namespace

TEST_CASE("tiny Transformer gradients match finite differences without dropout") { check_tiny_gradients(0.0, false); }

TEST_CASE("tiny Transformer gradients match finite differences with dropout at a fixed step") {
  check_tiny_gradients(0.2, true);
}
