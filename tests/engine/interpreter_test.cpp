// The interpreter on the examples in examples/, with every input and param bound
// to fixed values, against results computed here directly with xtensor and loops.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "engine/interpreter.h"
#include "engine/ir/parser.h"

using namespace kiln;
using F32 = Tensor::F32;

namespace {

Interpreter load_example(const std::string& name) {
  return Interpreter(parse_kir_file((std::filesystem::path(KILN_SOURCE_DIR) / "examples" / (name + ".kir")).string()));
}

F32 reshaped(F32 a, const Shape& shape) {
  a.reshape(xt_shape(shape));
  return a;
}

// Fixed, varied values: element k is scale * sin(freq * k + phase).
F32 wave(const Shape& shape, float freq, float phase, float scale = 1.0f) {
  return reshaped(scale * xt::sin(xt::arange<float>(static_cast<float>(numel(shape))) * freq + phase), shape);
}

// [m,k] @ [k,n], written out.
F32 matmul(const F32& a, const F32& b) {
  const size_t m = a.shape(0), k = a.shape(1), n = b.shape(1);
  F32 c = xt::zeros<float>({m, n});
  for (size_t i = 0; i < m; ++i)
    for (size_t j = 0; j < n; ++j)
      for (size_t p = 0; p < k; ++p) c(i, j) += a(i, p) * b(p, j);
  return c;
}

// log softmax of each row of a [rows, classes] array.
F32 log_softmax_rows(const F32& z) {
  F32 out = z;
  for (size_t r = 0; r < z.shape(0); ++r) {
    auto row = xt::view(out, r, xt::all());
    const float m = xt::amax(row)();
    const float lse = m + std::log(xt::sum(xt::exp(row - m))());
    row -= lse;
  }
  return out;
}

void check_close(const F32& got, const F32& want, float tol = 1e-5f) {
  REQUIRE(got.shape() == want.shape());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(got.flat(i) == doctest::Approx(want.flat(i)).epsilon(tol).scale(1.0));
  }
}

}  // namespace

TEST_CASE("examples/mlp.kir: relu MLP logits and mean cross-entropy") {
  Interpreter exe = load_example("mlp");
  const F32 x = wave({8, 16}, 0.37f, 0.1f);
  const Tensor::I32 labels = {3, 0, 1, 1, 2, 0, 3, 2};
  const F32 w1 = wave({16, 32}, 0.11f, 0.5f, 0.3f), b1 = wave({32}, 0.7f, 0.2f, 0.1f);
  const F32 w2 = wave({32, 4}, 0.23f, 1.0f, 0.4f), b2 = wave({4}, 1.3f, 0.0f, 0.2f);
  exe.bind("x", x);
  exe.bind("labels", labels);
  exe.bind("w1", w1);
  exe.bind("b1", b1);
  exe.bind("w2", w2);
  exe.bind("b2", b2);
  exe.run();

  const F32 hidden = xt::maximum(matmul(x, w1) + b1, 0.0f);
  const F32 logits = matmul(hidden, w2) + b2;
  const F32 logp = log_softmax_rows(logits);
  double loss = 0;
  for (size_t i = 0; i < 8; ++i) loss -= logp(i, static_cast<size_t>(labels(i)));
  loss /= 8;

  check_close(exe.output("logits").f32(), logits);
  CHECK(exe.output("loss").f32()() == doctest::Approx(loss).epsilon(1e-5));
}

TEST_CASE("examples/softmax_classifier.kir: probabilities and label-smoothed loss skipping padding") {
  Interpreter exe = load_example("softmax_classifier");
  const F32 x = wave({2, 5, 8}, 0.29f, 0.3f);
  const Tensor::I32 labels = {{2, 0, 1, -1, -1}, {1, 1, 0, 2, -1}};  // 7 real positions
  const F32 w = wave({8, 3}, 0.41f, 0.9f, 0.5f), b = wave({3}, 2.1f, 0.4f, 0.3f);
  exe.bind("x", x);
  exe.bind("labels", labels);
  exe.bind("w", w);
  exe.bind("b", b);
  exe.run();

  const F32 logits = matmul(reshaped(x, {10, 8}), w) + b;
  const F32 logp = log_softmax_rows(logits);
  // Smoothed target: 0.9 on the label plus 0.1/3 on every class.
  double loss = 0;
  int kept = 0;
  for (size_t p = 0; p < 10; ++p) {
    const int32_t y = labels.flat(p);
    if (y == -1) continue;
    double row = -0.9 * logp(p, static_cast<size_t>(y));
    for (size_t c = 0; c < 3; ++c) row -= 0.1 / 3 * logp(p, c);
    loss += row;
    ++kept;
  }
  loss /= kept;

  F32 probs = xt::exp(logp);
  probs.reshape({2, 5, 3});
  check_close(exe.output("probs").f32(), probs);
  CHECK(exe.output("loss").f32()() == doctest::Approx(loss).epsilon(1e-5));
}

TEST_CASE("examples/attention.kir: causal multi-head attention, residual and layer norm") {
  constexpr size_t B = 2, T = 8, D = 16, H = 4, Dh = 4;
  Interpreter exe = load_example("attention");
  const F32 x = wave({B, T, D}, 0.13f, 0.7f);
  const F32 wq = wave({D, D}, 0.31f, 0.1f, 0.4f), wk = wave({D, D}, 0.17f, 0.6f, 0.4f);
  const F32 wv = wave({D, D}, 0.53f, 1.1f, 0.4f), wo = wave({D, D}, 0.07f, 0.3f, 0.4f);
  const F32 gamma = 1.0f + wave({D}, 0.9f, 0.0f, 0.2f), beta = wave({D}, 0.6f, 0.5f, 0.1f);
  exe.bind("x", x);
  exe.bind("wq", wq);
  exe.bind("wk", wk);
  exe.bind("wv", wv);
  exe.bind("wo", wo);
  exe.bind("gamma", gamma);
  exe.bind("beta", beta);
  exe.run();

  const F32 rows = reshaped(x, {B * T, D});
  const F32 q = matmul(rows, wq), k = matmul(rows, wk), v = matmul(rows, wv);
  // Head h of position t is columns h*Dh .. h*Dh+Dh-1 of row b*T+t.
  F32 merged = xt::zeros<float>({B * T, D});
  for (size_t b = 0; b < B; ++b)
    for (size_t h = 0; h < H; ++h)
      for (size_t i = 0; i < T; ++i) {
        std::vector<double> score(i + 1);  // causal: only positions j <= i
        double max = -INFINITY;
        for (size_t j = 0; j <= i; ++j) {
          double s = 0;
          for (size_t d = 0; d < Dh; ++d) s += q(b * T + i, h * Dh + d) * k(b * T + j, h * Dh + d);
          score[j] = s / std::sqrt(double(Dh));
          max = std::max(max, score[j]);
        }
        double total = 0;
        for (double& s : score) total += (s = std::exp(s - max));
        for (size_t j = 0; j <= i; ++j)
          for (size_t d = 0; d < Dh; ++d)
            merged(b * T + i, h * Dh + d) += static_cast<float>(score[j] / total) * v(b * T + j, h * Dh + d);
      }
  const F32 residual = rows + matmul(merged, wo);
  F32 y = xt::zeros<float>({B * T, D});
  for (size_t r = 0; r < B * T; ++r) {
    double mean = 0, var = 0;
    for (size_t d = 0; d < D; ++d) mean += residual(r, d) / double(D);
    for (size_t d = 0; d < D; ++d) var += (residual(r, d) - mean) * (residual(r, d) - mean) / double(D);
    for (size_t d = 0; d < D; ++d)
      y(r, d) = static_cast<float>((residual(r, d) - mean) / std::sqrt(var + 1e-5) * gamma(d) + beta(d));
  }
  y.reshape({B, T, D});
  check_close(exe.output("y").f32(), y, 1e-4f);
}
