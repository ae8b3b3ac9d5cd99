// cross_entropy compiled alone against the interpreter: random logits shapes
// (classes off the vector widths, one class, rank 1 to 4), labels with ignored
// positions, every smoothing and ignore_index variant, masked -inf logits, and
// out-of-range labels reported as run-time errors.
//
// Tolerance {1e-5, 1e-5}: the JIT's per-row log-sum-exp uses fast exp and log
// (within 1.5 and 1 ulp, fast_math.h) and adds the exp in another order; a row's
// log-probabilities then carry about n * 2^-24 relative error of the sum as an
// absolute error (n <= 1000 here). The rows' losses are combined in double on
// both sides, so the mean keeps that error, relative to losses of order 1 to 10
// and up to 1e3 where logits reach 1e3 (measured: 9e-7 relative at most).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr Tolerance kLoss{1e-5, 1e-5};

Graph loss_graph(const Shape& logits, double smoothing, int64_t ignore_index) {
  const Shape positions(logits.begin(), logits.end() - 1);
  return one_op_graph("cross_entropy", {{DType::f32, logits}, {DType::i32, positions}},
                      {{"smoothing", smoothing}, {"ignore_index", ignore_index}});
}

// Labels in [0, classes), with probability p_ignored ignore_index instead.
Tensor random_labels(Rng& rng, const Shape& positions, int64_t classes, int64_t ignore_index, double p_ignored) {
  Tensor labels = Tensor::zeros({DType::i32, positions});
  for (int32_t& l : labels.i32())
    l = static_cast<int32_t>(rng.coin(p_ignored) ? ignore_index : rng.uniform(0, classes - 1));
  return labels;
}

Tensor tensor_f32(const Shape& shape, std::vector<float> values) {
  Tensor t = Tensor::zeros({DType::f32, shape});
  std::copy(values.begin(), values.end(), t.f32().begin());
  return t;
}

Tensor tensor_i32(const Shape& shape, std::vector<int32_t> values) {
  Tensor t = Tensor::zeros({DType::i32, shape});
  std::copy(values.begin(), values.end(), t.i32().begin());
  return t;
}

float run_jit(const Graph& g, const std::map<std::string, Tensor>& bindings) {
  compiler::JitExecutable jit(g);
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  jit.run();
  return jit.output(jit.output_names()[0]).f32()();
}

}  // namespace

TEST_CASE("jit cross_entropy gives the hand-computed losses") {
  // log_softmax([1, 2, 3]) = [-2.40760596, -1.40760596, -0.40760596].
  const Tensor logits = tensor_f32({2, 3}, {1, 2, 3, 3, 2, 1});
  // Row 0, label 2: 0.40760596. Row 1, label 0: the same (reversed logits).
  CHECK(run_jit(loss_graph({2, 3}, 0.0, -100), {{"x0", logits}, {"x1", tensor_i32({2}, {2, 0})}}) ==
        doctest::Approx(0.40760596).epsilon(1e-6));
  // Smoothing 0.1: 0.9 * 0.40760596 + 0.1 / 3 * (2.40760596 + 1.40760596 + 0.40760596).
  CHECK(run_jit(loss_graph({2, 3}, 0.1, -100), {{"x0", logits}, {"x1", tensor_i32({2}, {2, 0})}}) ==
        doctest::Approx(0.50760596).epsilon(1e-6));
  // Row 1 ignored (label == ignore_index 1, a valid class): row 0 alone, label 0.
  CHECK(run_jit(loss_graph({2, 3}, 0.0, 1), {{"x0", logits}, {"x1", tensor_i32({2}, {0, 1})}}) ==
        doctest::Approx(2.40760596).epsilon(1e-6));
  // Every row ignored: 0, not 0 / 0.
  CHECK(run_jit(loss_graph({2, 3}, 0.0, -100), {{"x0", logits}, {"x1", tensor_i32({2}, {-100, -100})}}) == 0.0f);
}

TEST_CASE("jit cross_entropy matches the interpreter on random shapes and attributes") {
  Rng rng(41);
  for (int i = 0; i < 60; ++i) {
    Shape logits = random_shape(rng, 3);
    logits.push_back(rng.pick(std::vector<int64_t>{1, 2, 7, 15, 16, 17, 33, 100}));  // classes
    const Shape positions(logits.begin(), logits.end() - 1);
    const double smoothing = rng.pick(std::vector<double>{0.0, 0.1, 1.0});
    const int64_t ignore_index = rng.coin() ? -100 : rng.uniform(0, logits.back() - 1);
    const Graph g = loss_graph(logits, smoothing, ignore_index);
    INFO(print_kir(g));
    std::map<std::string, Tensor> bindings = random_bindings(g, rng);
    bindings.at("x1") = random_labels(rng, positions, logits.back(), ignore_index, i % 4 == 0 ? 1.0 : 0.2);
    check_jit_matches_interpreter(g, bindings, kLoss);
  }
}

TEST_CASE("jit cross_entropy with masked logits matches the interpreter") {
  // A -inf logit off the label: its class has probability 0, so without smoothing
  // the reference still multiplies it by smoothing / V = 0 (nan), with smoothing
  // the loss is inf; a -inf logit at the label gives inf. The JIT must agree.
  Rng rng(42);
  for (double smoothing : {0.0, 0.1})
    for (int i = 0; i < 10; ++i) {
      const Shape logits{rng.pick(std::vector<int64_t>{1, 5, 40}), rng.pick(std::vector<int64_t>{3, 17, 40})};
      const Graph g = loss_graph(logits, smoothing, -100);
      std::map<std::string, Tensor> bindings = random_bindings(g, rng);
      bindings.at("x1") = random_labels(rng, {logits[0]}, logits[1], -100, 0.0);
      for (float& v : bindings.at("x0").f32())
        if (rng.coin(0.05)) v = -std::numeric_limits<float>::infinity();
      check_jit_matches_interpreter(g, bindings, kLoss);
    }
}

TEST_CASE("jit cross_entropy matches the interpreter at the edges of f32") {
  // Logits near the largest float (x - max overflows to -inf), subnormals,
  // infinities and nan, as whole rows of one value or mixed.
  static const std::vector<float> edges = {3.4e38f,
                                           -3.4e38f,
                                           1e20f,
                                           1e-40f,
                                           -0.0f,
                                           std::numeric_limits<float>::infinity(),
                                           -std::numeric_limits<float>::infinity(),
                                           std::numeric_limits<float>::quiet_NaN(),
                                           1.5f};
  Rng rng(45);
  for (int i = 0; i < 30; ++i) {
    const Shape logits{rng.pick(std::vector<int64_t>{1, 3, 8}), rng.pick(std::vector<int64_t>{1, 2, 17, 40})};
    const Graph g = loss_graph(logits, rng.pick(std::vector<double>{0.0, 0.1}), -100);
    std::map<std::string, Tensor> bindings = random_bindings(g, rng);
    bindings.at("x1") = random_labels(rng, {logits[0]}, logits[1], -100, 0.2);
    Tensor::F32& x = bindings.at("x0").f32();
    const bool constant = rng.coin();
    const float c = rng.pick(edges);
    for (float& v : x) v = constant ? c : rng.pick(edges);
    check_jit_matches_interpreter(g, bindings, kLoss);
  }
}

TEST_CASE("jit cross_entropy reports labels out of range as the interpreter does") {
  for (int32_t bad : {3, 100, -1, -101}) {
    const Graph g = loss_graph({4, 3}, 0.1, -100);
    std::map<std::string, Tensor> bindings = {{"x0", tensor_f32({4, 3}, std::vector<float>(12, 0.5f))},
                                              {"x1", tensor_i32({4}, {0, -100, bad, 2})}};
    INFO("label " << bad);
    Interpreter interp(g);
    compiler::JitExecutable jit(g);
    for (const auto& [name, t] : bindings) {
      interp.bind(name, t);
      jit.bind(name, t);
    }
    std::string message;
    try {
      interp.run();
    } catch (const Error& e) {
      message = e.what();
    }
    CHECK(message.find("out of range") != std::string::npos);
    CHECK_THROWS_WITH_AS(jit.run(), message.c_str(), Error);
    // Once the label is fixed, the same executable runs again.
    jit.bind("x1", tensor_i32({4}, {0, -100, 1, 2}));
    CHECK_NOTHROW(jit.run());
    CHECK(jit.output(jit.output_names()[0]).f32()() == doctest::Approx(std::log(3.0)));
  }
}

TEST_CASE("jit cross_entropy over many rows is thread-count independent") {
  Rng rng(43);
  for (const Shape& logits : std::vector<Shape>{{2000, 300}, {50000, 3}, {4, 30, 1000}}) {
    const Shape positions(logits.begin(), logits.end() - 1);
    const Graph g = loss_graph(logits, 0.1, -100);
    std::map<std::string, Tensor> bindings = random_bindings(g, rng);
    bindings.at("x1") = random_labels(rng, positions, logits.back(), -100, 0.1);
    check_jit_matches_interpreter(g, bindings, kLoss);
    compiler::JitExecutable jit(g);
    for (const auto& [name, t] : bindings) jit.bind(name, t);
    std::vector<float> losses;
    for (int threads : {1, 4}) {
      kiln_set_num_threads(threads);
      jit.run();
      losses.push_back(jit.output(jit.output_names()[0]).f32()());
    }
    kiln_set_num_threads(0);
    INFO("logits " << shape_str(logits));
    CHECK(losses[0] == losses[1]);  // bit-identical
  }
}

TEST_CASE("jit cross_entropy matches the interpreter on AVX2 and SSE targets") {
  Rng rng(44);
  for (const char* cpu : {"haswell", "x86-64"}) {
    INFO("target " << cpu);
    const Graph g = loss_graph({6, 37}, 0.1, -100);
    std::map<std::string, Tensor> bindings = random_bindings(g, rng);
    bindings.at("x1") = random_labels(rng, {6}, 37, -100, 0.2);
    check_jit_matches_interpreter(g, bindings, kLoss, 1, jit_for_cpu(cpu));
  }
}
