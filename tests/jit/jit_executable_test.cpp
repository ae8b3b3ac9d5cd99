// JitExecutable end to end: hand-computed results, bindings and assigns, compile
// errors for ops without a lowering, run-time errors, the backend switch.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>

#include "compiler/backend.h"
#include "compiler/jit_executable.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

using namespace kiln;
using compiler::JitExecutable;

namespace {

Tensor f32(std::vector<size_t> shape, std::vector<float> values) {
  Tensor::F32 a = Tensor::F32::from_shape(shape);
  std::copy(values.begin(), values.end(), a.begin());
  return Tensor(std::move(a));
}

std::vector<float> values_of(const Tensor& t) { return {t.f32().begin(), t.f32().end()}; }

}  // namespace

TEST_CASE("add mul and exp through the JIT") {
  Graph g("axpy");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 3}});
  const Value y = b.input("y", {DType::f32, {3}});
  const Value s = ops::add(b, ops::mul(b, x, y), y);  // x*y + y, y broadcast over rows
  b.output(s);
  b.output(ops::exp(b, s));
  g.rename(s, "s");
  JitExecutable jit(std::move(g));
  jit.bind("x", f32({2, 3}, {1, 2, 3, -1, 0, 0.5f}));
  jit.bind("y", f32({3}, {2, -1, 0.25f}));
  jit.run();
  CHECK(values_of(jit.output("s")) == std::vector<float>{4, -3, 1, 0, -1, 0.375f});
  const std::vector<float> e = values_of(jit.output(jit.output_names()[1]));
  const float expected[] = {54.59815f, 0.049787068f, 2.7182817f, 1.0f, 0.36787944f, 1.4549914f};
  for (size_t i = 0; i < 6; ++i) CHECK(e[i] == doctest::Approx(expected[i]).epsilon(1e-6));
}

TEST_CASE("a long vector runs the vector loop the remainder and the thread pool") {
  Graph g("long");
  Builder b(g);
  const int64_t n = 100003;  // rows of a prime length: not a multiple of any vector width
  const Value x = b.input("x", {DType::f32, {n}});
  b.output(ops::mul(b, x, x));
  JitExecutable jit(std::move(g));
  Tensor::F32 in = Tensor::F32::from_shape({static_cast<size_t>(n)});
  for (int64_t i = 0; i < n; ++i) in(static_cast<size_t>(i)) = static_cast<float>(i % 1000) * 0.5f;
  jit.bind("x", Tensor(in));
  jit.run();
  const Tensor::F32& out = jit.output(jit.output_names()[0]).f32();
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i % 1000) * 0.5f;
    if (out(static_cast<size_t>(i)) != v * v) FAIL("element " << i << " is " << out(static_cast<size_t>(i)));
  }
}

TEST_CASE("state is updated by assign after each run") {
  Graph g("counter");
  Builder b(g);
  const Value c = b.state("c", {DType::i32, {2}});
  const Value next = ops::add(b, c, c);
  b.emit("assign", {c, next});
  b.output(next);
  JitExecutable jit(std::move(g));
  Tensor::I32 start = {1, -3};
  jit.bind("c", Tensor(start));
  jit.run();
  jit.run();
  const Tensor::I32 expected = {4, -12};
  CHECK(jit.binding("c").i32() == expected);
  CHECK(jit.output(jit.output_names()[0]).i32() == expected);
}

TEST_CASE("an op without a lowering fails at compile time naming it") {
  static const bool registered = [] {
    OpRegistry::global().add(OpDef{.name = "jit_test_unlowered",
                                   .summary = "an op only these tests know",
                                   .min_operands = 1,
                                   .max_operands = 1,
                                   .infer = [](const std::vector<TensorType>& in, const Attrs&) { return in; },
                                   .reference = [](const KernelArgs& a) { *a.out[0] = *a.in[0]; }});
    return true;
  }();
  CHECK(registered);
  Graph g("unlowered");
  Builder b(g);
  b.output(b.emit1("jit_test_unlowered", {b.input("x", {DType::f32, {2}})}));
  CHECK_THROWS_WITH_AS(JitExecutable{g}, "jit: no lowering for op 'jit_test_unlowered'", Error);
}

TEST_CASE("integer division by zero is a run-time error like the interpreter's") {
  Graph g("idiv");
  Builder b(g);
  b.output(ops::div(b, b.input("x", {DType::i32, {20}}), b.input("y", {DType::i32, {20}})));
  JitExecutable jit(std::move(g));
  Tensor::I32 x = Tensor::I32::from_shape({20}), y = Tensor::I32::from_shape({20});
  x.fill(7);
  y.fill(2);
  jit.bind("x", Tensor(x));
  jit.bind("y", Tensor(y));
  jit.run();
  CHECK(jit.output(jit.output_names()[0]).i32()(0) == 3);
  y(17) = 0;
  jit.bind("y", Tensor(y));
  CHECK_THROWS_WITH_AS(jit.run(), "div: integer division by zero", Error);  // the reference's message
  y(17) = -1;
  x(17) = INT32_MIN;
  jit.bind("x", Tensor(x));
  jit.bind("y", Tensor(y));
  jit.run();  // wraps like the reference instead of trapping
  CHECK(jit.output(jit.output_names()[0]).i32()(17) == INT32_MIN);
}

TEST_CASE("make_executable switches backends and rejects unknown ones") {
  Graph g("two");
  Builder b(g);
  b.output(ops::neg(b, b.input("x", {DType::f32, {3}})));
  const auto options = [](std::string backend, std::string cpu = {}) {
    compiler::BackendOptions o;
    o.backend = std::move(backend);
    o.target_cpu = std::move(cpu);
    return o;
  };
  for (const char* backend : {"jit", "interp"}) {
    auto exe = compiler::make_executable(g, options(backend));
    exe->bind("x", f32({3}, {1, -2, 0}));
    exe->run();
    CHECK(values_of(exe->output(exe->output_names()[0])) == std::vector<float>{-1, 2, -0.0f});
  }
  CHECK(dynamic_cast<JitExecutable*>(compiler::make_executable(g, {}).get()) != nullptr);
  CHECK_THROWS_WITH_AS(compiler::make_executable(g, options("gpu")), "unknown backend 'gpu' (expected jit or interp)", Error);
  CHECK_THROWS_WITH_AS(compiler::make_executable(g, options("jit", "no-such-cpu")),
                       "unknown target CPU 'no-such-cpu' (see llc -mcpu=help)", Error);
}

TEST_CASE("compile times are measured per stage") {
  Graph g("timed");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {64, 33}});
  b.output(ops::tanh(b, ops::add(b, ops::exp(b, x), x)));
  compiler::JitOptions fresh;
  fresh.kernels.cache = false;  // compiled here, not loaded from an earlier run's cache
  const auto start = std::chrono::steady_clock::now();
  JitExecutable jit(std::move(g), fresh);
  const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const compiler::CompileTimes& t = jit.compile_times();
  MESSAGE("lower " << t.lower_ms << " ms, optimize " << t.optimize_ms << " ms, codegen " << t.codegen_ms
                   << " ms; constructor " << total << " ms");
  CHECK(t.lower_ms > 0);
  CHECK(t.optimize_ms > 0);
  CHECK(t.codegen_ms > 0);
  CHECK(t.lower_ms + t.optimize_ms + t.codegen_ms <= total);
}
