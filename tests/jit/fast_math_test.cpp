// The error bounds stated in compiler/codegen/fast_math.h, measured over a dense
// sweep of the float bit patterns (every 61st: ~70 million inputs of all signs and
// magnitudes, subnormals included) against the correctly rounded result (std::
// in double, rounded to float), plus the special inputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "compiler/jit_executable.h"
#include "jit/differential.h"

using namespace kiln;

namespace {

constexpr size_t kBatch = size_t{1} << 22;
constexpr uint64_t kStride = 61;

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// |actual - expected| in units of the spacing of floats at `expected`.
double ulp_error(float actual, double exact) {
  const auto expected = static_cast<float>(exact);
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) == std::isnan(actual) ? 0 : 1e9;
  if (std::isinf(expected) || std::isinf(actual)) return expected == actual ? 0 : 1e9;
  const float e = std::fabs(expected);
  const double spacing = std::nextafter(e, std::numeric_limits<float>::infinity()) - e;
  return std::fabs(static_cast<double>(actual) - exact) / spacing;
}

struct Sweep {
  double max_ulp = 0;
  float worst_input = 0;
};

// Runs `op` through the JIT over the sweep; `exact` gives the reference in double.
Sweep sweep(const std::string& op, const std::function<double(double)>& exact) {
  compiler::JitExecutable jit(test::one_op_graph(op, {{DType::f32, {static_cast<int64_t>(kBatch)}}}));
  Sweep s;
  Tensor::F32 in = Tensor::F32::from_shape({kBatch});
  for (uint64_t bits = 0; bits <= 0xffffffffull;) {
    size_t n = 0;
    for (; n < kBatch && bits <= 0xffffffffull; ++n, bits += kStride) in(n) = from_bits(static_cast<uint32_t>(bits));
    for (size_t i = n; i < kBatch; ++i) in(i) = 1.0f;
    jit.bind("x0", Tensor(in));
    jit.run();
    const Tensor::F32& out = jit.output(jit.output_names()[0]).f32();
    for (size_t i = 0; i < n; ++i) {
      const double err = ulp_error(out(i), exact(in(i)));
      if (err > s.max_ulp) s = {err, in(i)};
    }
  }
  return s;
}

}  // namespace

TEST_CASE("fast exp is within 1.5 ulp over the float range") {
  const Sweep s = sweep("exp", [](double x) { return std::exp(x); });
  MESSAGE("max error " << s.max_ulp << " ulp at x = " << s.worst_input);
  CHECK(s.max_ulp <= 1.5);
}

TEST_CASE("fast log is within 1 ulp over the float range") {
  const Sweep s = sweep("log", [](double x) { return std::log(x); });
  MESSAGE("max error " << s.max_ulp << " ulp at x = " << s.worst_input);
  CHECK(s.max_ulp <= 1.0);
}

TEST_CASE("fast tanh is within 1.5 ulp over the float range") {
  const Sweep s = sweep("tanh", [](double x) { return std::tanh(x); });
  MESSAGE("max error " << s.max_ulp << " ulp at x = " << s.worst_input);
  CHECK(s.max_ulp <= 1.5);
}

TEST_CASE("fast erf is within 8 ulp over the float range") {
  const Sweep s = sweep("erf", [](double x) { return std::erf(x); });
  MESSAGE("max error " << s.max_ulp << " ulp at x = " << s.worst_input);
  CHECK(s.max_ulp <= 8.0);
}

TEST_CASE("fast math special inputs behave as std does") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x(Tensor::F32{-inf, inf, nan, 0.0f, -0.0f, 88.72283f, 88.7229f, -103.972f, -103.98f, -1.0f,
                             1e-45f, 1.17549435e-38f, 9.0f, -9.5f, 20.0f});
  for (const auto& [op, f] : std::vector<std::pair<std::string, float (*)(float)>>{
           {"exp", std::exp}, {"log", std::log}, {"tanh", std::tanh}, {"erf", std::erf}}) {
    compiler::JitExecutable jit(test::one_op_graph(op, {x.type()}));
    jit.bind("x0", x);
    jit.run();
    const Tensor::F32& out = jit.output(jit.output_names()[0]).f32();
    for (size_t i = 0; i < x.f32().size(); ++i) {
      const float want = f(x.f32()(i));
      INFO(op << "(" << x.f32()(i) << ") = " << out(i) << ", std gives " << want);
      CHECK(ulp_error(out(i), want) <= 2.0);
      if (!std::isnan(want)) CHECK(std::signbit(out(i)) == std::signbit(want));  // a nan's sign is unspecified
    }
  }
}
