// softmax, log_softmax and layer_norm compiled alone against the interpreter, on
// random shapes (sizes off the vector widths, size-1 dims, every axis) and values
// (magnitudes up to 1e3, masked -inf entries and fully masked lines).
//
// Tolerances (abs + rel * |expected|), from how the two sides compute:
//  * softmax {1e-6, 1e-5}: exp within 1.5 ulp on either side (fast_math.h; std's
//    within 1), and the sum of exp added in another order (W lanes, then a tree):
//    a sum of n positive floats is off by at most about n * 2^-24 relative, in
//    practice sqrt(n) * 2^-24; the tests' lines have n <= 1000 (measured: 6e-7).
//    abs covers results in the subnormals, where an ulp is large relative to them.
//  * log_softmax {2e-5, 1e-6}: x - max is exact on both sides; log(sum) carries the
//    sum's relative error as an absolute one (d log s = ds / s); rel covers the
//    last rounding of x - max - log(sum) at |x| up to 1e3 (measured: 1 ulp).
//  * layer_norm {1e-5, 1e-5}: the reference accumulates in double, the JIT in f32
//    with a corrected two-pass mean and variance (normalization_emitters.cpp), so
//    the normalized values are within a few ulp; results reach |gamma| * sqrt(D)
//    + |beta| ~ 30 here (|gamma|, |beta| <= 4), where 1e-5 is 5 ulp (measured: 4e-6).
//    Its mean result: the JIT's is the f32 mean m it subtracts plus the mean of the
//    f32 differences x * s - m, so its error scales with the row's largest |x|, not
//    with the mean: within 2.5e-7 * max |x|, 4 ulp of it (measured: 4.3e-8). Its
//    rstd result {0, 1e-6}: rstd carries half the variance's relative error, which
//    the f32 sums of squares keep to a few ulp (measured: 1.9e-7).
#include "ops/normalization.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr Tolerance kSoftmax{1e-6, 1e-5};
constexpr Tolerance kLogSoftmax{2e-5, 1e-6};
constexpr Tolerance kLayerNorm{1e-5, 1e-5};
constexpr double kLayerNormMean = 2.5e-7;  // times the row's largest |x|
constexpr Tolerance kLayerNormRstd{0, 1e-6};
constexpr float kInf = std::numeric_limits<float>::infinity();

Tolerance softmax_tolerance(const std::string& op) { return op == "softmax" ? kSoftmax : kLogSoftmax; }

// Sets entries of x to -inf with probability p.
void mask_randomly(Rng& rng, Tensor& x, double p) {
  for (float& v : x.f32())
    if (rng.coin(p)) v = -kInf;
}

// Overwrites x with values from the edges of f32: near the largest float (whose
// squares and sums overflow), subnormals, zeros of both signs, infinities, nan;
// each row (last axis) either all one value or mixed.
void fill_extremes(Rng& rng, Tensor& x) {
  static const std::vector<float> edges = {3.4e38f,
                                           -3.4e38f,
                                           1e20f,
                                           -1e20f,
                                           1e-40f,
                                           -1e-40f,
                                           0.0f,
                                           -0.0f,
                                           kInf,
                                           -kInf,
                                           std::numeric_limits<float>::quiet_NaN(),
                                           1.5f};
  Tensor::F32& v = x.f32();
  const size_t d = v.dimension() == 0 ? 1 : v.shape().back();
  for (size_t row = 0; row * d < v.size(); ++row) {
    const bool constant = rng.coin();
    const float c = rng.pick(edges);
    for (size_t k = 0; k < d; ++k) v.data()[row * d + k] = constant ? c : rng.pick(edges);
  }
}

// JIT against interpreter on one op whose random bindings `edit` adjusts.
void check_edited(const std::string& op, const std::vector<TensorType>& operands, const Attrs& attrs, Tolerance tol,
                  Rng& rng, const std::function<void(std::map<std::string, Tensor>&)>& edit) {
  const Graph g = one_op_graph(op, operands, attrs);
  std::map<std::string, Tensor> bindings = random_bindings(g, rng);
  edit(bindings);
  INFO(print_kir(g));
  check_jit_matches_interpreter(g, bindings, tol);
}

// layer_norm's results JIT against interpreter: y within kLayerNorm, rstd within
// kLayerNormRstd, and each row's mean within kLayerNormMean times its largest |x|.
void check_layer_norm(const Graph& g, const std::map<std::string, Tensor>& bindings,
                      const compiler::JitOptions& options = {}) {
  INFO(print_kir(g));
  Interpreter interp(g);
  compiler::JitExecutable jit(g, options);
  for (const auto& [name, t] : bindings) {
    interp.bind(name, t);
    jit.bind(name, t);
  }
  interp.run();
  jit.run();
  const auto result = [&](auto& exe, size_t i) { return exe.output(g.name_of(g.outputs()[i])); };
  CHECK(compare_tensors(result(interp, 0), result(jit, 0), kLayerNorm) == "");
  CHECK(compare_tensors(result(interp, 2), result(jit, 2), kLayerNormRstd) == "");
  const Tensor want = result(interp, 1), got = result(jit, 1);
  const Tensor::F32& x = bindings.at("x0").f32();
  const size_t d = x.dimension() == 0 ? 1 : x.shape().back();
  for (size_t row = 0; row < static_cast<size_t>(want.numel()); ++row) {
    float max_abs = 0;
    for (size_t k = 0; k < d; ++k) max_abs = std::max(max_abs, std::fabs(x.data()[row * d + k]));
    const float e = want.f32().data()[row], a = got.f32().data()[row];
    const bool close =
        (std::isnan(e) && std::isnan(a)) || e == a || std::fabs(static_cast<double>(e) - a) <= kLayerNormMean * max_abs;
    CHECK_MESSAGE(close, "mean of row " << row << ": expected " << e << ", got " << a << ", max |x| " << max_abs);
  }
}

Tensor run_jit(const Graph& g, const std::map<std::string, Tensor>& bindings, size_t result = 0) {
  compiler::JitExecutable jit(g);
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  jit.run();
  return jit.output(jit.output_names()[result]);
}

Tensor row(std::vector<float> values) {
  Tensor::F32 t = Tensor::F32::from_shape({values.size()});
  std::copy(values.begin(), values.end(), t.begin());
  return Tensor(t);
}

}  // namespace

TEST_CASE("jit softmax and log_softmax of a small row give the hand-computed values") {
  for (const char* op : {"softmax", "log_softmax"}) {
    const Tensor y = run_jit(one_op_graph(op, {{DType::f32, {3}}}), {{"x0", row({1, 2, 3})}});
    // exp(k - 3) / (e^-2 + e^-1 + 1) and its log, k = 1, 2, 3.
    const std::vector<double> want = std::string(op) == "softmax"
                                         ? std::vector<double>{0.09003057, 0.24472847, 0.66524096}
                                         : std::vector<double>{-2.40760596, -1.40760596, -0.40760596};
    for (size_t k = 0; k < 3; ++k) CHECK(y.f32()(k) == doctest::Approx(want[k]).epsilon(1e-6));
  }
}

TEST_CASE("jit softmax and log_softmax match the interpreter on every axis") {
  Rng rng(31);
  for (const char* op : {"softmax", "log_softmax"})
    for (int i = 0; i < 40; ++i) {
      Shape s = random_shape(rng, 4);
      if (s.empty()) s.push_back(rng.pick(std::vector<int64_t>{1, 17, 33}));
      const auto rank = static_cast<int64_t>(s.size());
      const int64_t axis = rng.uniform(-rank, rank - 1);
      check_op(op, {{DType::f32, s}}, {{"axis", axis}}, softmax_tolerance(op), rng);
    }
}

TEST_CASE("jit softmax and log_softmax handle masked entries and fully masked lines like the interpreter") {
  Rng rng(32);
  for (const char* op : {"softmax", "log_softmax"}) {
    // Random -inf entries: a line keeps its finite entries' distribution.
    for (int i = 0; i < 20; ++i) {
      Shape s = random_shape(rng, 3);
      if (s.empty()) s.push_back(17);
      const auto rank = static_cast<int64_t>(s.size());
      check_edited(op, {{DType::f32, s}}, {{"axis", rng.uniform(-rank, rank - 1)}}, softmax_tolerance(op), rng,
                   [&](auto& b) { mask_randomly(rng, b.at("x0"), 0.3); });
    }
    // A whole line of -inf gives 0 (log: -inf), like the reference; a line with
    // one finite entry gives 1 (log: 0) there.
    for (int64_t axis : {0, 1}) {
      const Graph g = one_op_graph(op, {{DType::f32, {5, 19}}}, {{"axis", axis}});
      std::map<std::string, Tensor> b = random_bindings(g, rng);
      Tensor::F32& x = b.at("x0").f32();
      for (size_t k = 0; k < x.shape(static_cast<size_t>(axis)); ++k) {
        (axis == 1 ? x(2, k) : x(k, 2)) = -kInf;                  // line 2 fully masked
        (axis == 1 ? x(3, k) : x(k, 3)) = k == 1 ? 7.0f : -kInf;  // line 3: one entry left
      }
      check_jit_matches_interpreter(g, b, softmax_tolerance(op));
      const Tensor::F32 y = run_jit(g, b).f32();
      const auto at = [&](size_t line, size_t k) { return axis == 1 ? y(line, k) : y(k, line); };
      for (size_t k = 0; k < x.shape(static_cast<size_t>(axis)); ++k) {
        CHECK(at(2, k) == (std::string(op) == "softmax" ? 0.0f : -kInf));
        CHECK(at(3, k) ==
              (k == 1 ? (std::string(op) == "softmax" ? 1.0f : 0.0f) : (std::string(op) == "softmax" ? 0.0f : -kInf)));
      }
    }
  }
}

TEST_CASE("jit large softmax runs in parallel and is thread-count independent") {
  Rng rng(33);
  for (const char* op : {"softmax", "log_softmax"}) {
    check_op(op, {{DType::f32, {300, 1000}}}, {{"axis", int64_t{-1}}}, softmax_tolerance(op), rng);
    check_op(op, {{DType::f32, {60, 40, 70}}}, {{"axis", int64_t{1}}}, softmax_tolerance(op), rng);
  }
}

TEST_CASE("jit layer_norm of a small row gives the hand-computed values") {
  const Graph g = one_op_graph("layer_norm", {{DType::f32, {4}}, {DType::f32, {4}}, {DType::f32, {4}}}, {{"eps", 0.0}});
  // mean 2.5, variance 1.25: (x - 2.5) / sqrt(1.25) * gamma + beta.
  const std::map<std::string, Tensor> bindings = {
      {"x0", row({1, 2, 3, 4})}, {"x1", row({1, 1, 2, -1})}, {"x2", row({0, 0, 0, 10})}};
  const Tensor y = run_jit(g, bindings);
  const std::vector<double> want = {-1.34164079, -0.44721360, 0.89442719, 10 - 1.34164079};
  for (size_t k = 0; k < 4; ++k) CHECK(y.f32()(k) == doctest::Approx(want[k]).epsilon(1e-6));
  CHECK(run_jit(g, bindings, 1).f32()() == 2.5f);
  CHECK(run_jit(g, bindings, 2).f32()() == doctest::Approx(0.89442719).epsilon(1e-6));
}

TEST_CASE("jit layer_norm matches the interpreter") {
  Rng rng(34);
  for (double eps : {1e-5, 1e-2, 1.0})
    for (int i = 0; i < 15; ++i) {
      Shape s = random_shape(rng, 3);
      if (s.empty()) s.push_back(33);
      const TensorType param{DType::f32, {s.back()}};
      const Graph g = one_op_graph("layer_norm", {{DType::f32, s}, param, param}, {{"eps", eps}});
      std::map<std::string, Tensor> b = random_bindings(g, rng);
      b.at("x1") = random_tensor(rng, param, Values::moderate);
      b.at("x2") = random_tensor(rng, param, Values::moderate);
      if (i % 5 == 0) b.at("x0").f32().fill(0.1f);  // constant rows: variance 0
      check_layer_norm(g, b);
    }
}

TEST_CASE("jit normalizations match the interpreter at the edges of f32") {
  Rng rng(37);
  for (int i = 0; i < 30; ++i) {
    const Shape s{rng.pick(std::vector<int64_t>{1, 4, 9}), rng.pick(std::vector<int64_t>{1, 2, 3, 17, 40})};
    for (const char* op : {"softmax", "log_softmax"})
      check_edited(op, {{DType::f32, s}}, {{"axis", rng.uniform(-2, 1)}}, softmax_tolerance(op), rng,
                   [&](auto& b) { fill_extremes(rng, b.at("x0")); });
    const TensorType param{DType::f32, {s.back()}};
    const double eps = rng.pick(std::vector<double>{1e-5, 0.0, 5e-324, 1e-300});
    const Graph g = one_op_graph("layer_norm", {{DType::f32, s}, param, param}, {{"eps", eps}});
    std::map<std::string, Tensor> b = random_bindings(g, rng);
    fill_extremes(rng, b.at("x0"));
    b.at("x1") = random_tensor(rng, param, Values::moderate);
    b.at("x2") = random_tensor(rng, param, Values::moderate);
    check_layer_norm(g, b);
  }
}

TEST_CASE("jit normalization kernels give bit-identical results with 1 and 4 threads") {
  Graph g("normalization_threads");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {513, 257}});
  b.output(ops::softmax(b, x, -1));
  b.output(ops::log_softmax(b, x, 0));
  b.output(ops::layer_norm(b, x, b.input("gamma", {DType::f32, {257}}), b.input("beta", {DType::f32, {257}})));
  Rng rng(35);
  const std::map<std::string, Tensor> bindings = random_bindings(g, rng);
  compiler::JitExecutable jit(g);
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  std::vector<std::vector<Tensor>> results;
  for (int threads : {1, 4}) {
    kiln_set_num_threads(threads);
    jit.run();
    results.emplace_back();
    for (const std::string& name : jit.output_names()) results.back().push_back(jit.output(name));
  }
  kiln_set_num_threads(0);
  for (size_t i = 0; i < results[0].size(); ++i) {
    INFO("output " << i);
    CHECK(compare_tensors(results[0][i], results[1][i], {0, 0}) == "");
  }
}

TEST_CASE("jit normalizations match the interpreter on AVX2 and SSE targets") {
  Rng rng(36);
  for (const char* cpu : {"haswell", "x86-64"}) {
    INFO("target " << cpu);
    const compiler::JitOptions options = jit_for_cpu(cpu);
    for (const auto& [shape, axis] : std::vector<std::pair<Shape, int64_t>>{{{3, 37}, -1}, {{5, 19, 11}, 1}, {{7}, 0}})
      for (const char* op : {"softmax", "log_softmax"}) {
        const Graph g = one_op_graph(op, {{DType::f32, shape}}, {{"axis", axis}});
        check_jit_matches_interpreter(g, random_bindings(g, rng), softmax_tolerance(op), 1, options);
      }
    const TensorType param{DType::f32, {37}};
    const Graph g = one_op_graph("layer_norm", {{DType::f32, {4, 37}}, param, param});
    std::map<std::string, Tensor> bindings = random_bindings(g, rng);
    bindings.at("x1") = random_tensor(rng, param, Values::moderate);
    bindings.at("x2") = random_tensor(rng, param, Values::moderate);
    check_layer_norm(g, bindings, options);
  }
}
