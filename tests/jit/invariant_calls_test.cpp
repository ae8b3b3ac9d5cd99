// Run-invariant calls in the JIT (compiler/jit_executable.h): they run on the
// first run and after a param is bound or unbound, and every run's results
// equal the interpreter's as if everything ran every time: with new inputs,
// after a param is bound again (a stale transpose would fail here), for
// constants, under --check-numerics, and for run-time errors.
#include <doctest/doctest.h>

#include <string>

#include "compiler/jit_executable.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;
using compiler::JitExecutable;

namespace {

// A decoder step's product in small: 4 rows by a param stored k x n, which
// pretranspose-weights reads through a run-invariant transpose, and a causal
// mask, a constant.
const char* const kStep = R"(graph @step {
  input %x : f32[4,8]
  param %w : f32[8,4]
  param %b : f32[4]
  %h = matmul(%x, %w) : f32[4,4]
  %mask = causal_mask() {size=4} : f32[4,4]
  %y = add(%h, %b) : f32[4,4]
  %out = add(%y, %mask) : f32[4,4]
  output %out
}
)";

compiler::JitOptions no_passes() {
  compiler::JitOptions options;
  options.pipeline.passes.passes = {std::string(compiler::kNoPasses)};
  return options;
}

size_t invariant_calls(const JitExecutable& jit) {
  size_t n = 0;
  for (const compiler::KernelCall& c : jit.compiled().program.calls) n += c.invariant;
  return n;
}

// The interpreter's outputs for the same bindings.
void check_against_interpreter(const JitExecutable& jit, const std::map<std::string, Tensor>& bindings) {
  Interpreter reference(jit.graph());
  for (const auto& [name, t] : bindings) reference.bind(name, t);
  reference.run();
  for (const std::string& name : jit.output_names()) {
    INFO("output %", name);
    // matmul sums in another order than the reference's loops.
    CHECK(compare_tensors(reference.output(name), jit.output(name), {1e-5, 1e-5}) == "");
  }
}

}  // namespace

TEST_CASE("invariant calls run once per binding of the params, and every run equals the interpreter's") {
  const Graph g = parse_kir(kStep, "step.kir");
  for (const bool passes : {true, false}) {
    CAPTURE(passes);
    JitExecutable jit(g, passes ? compiler::JitOptions{} : no_passes());
    // With the default pipeline, the transpose of %w (the mask is fused where
    // it is read); as written, the mask.
    REQUIRE(invariant_calls(jit) == 1);
    const size_t all = jit.compiled().program.calls.size();
    Rng rng(17);
    std::map<std::string, Tensor> bindings = random_bindings(g, rng, Values::moderate);
    for (const auto& [name, t] : bindings) jit.bind(name, t);
    jit.profile(true);
    std::vector<size_t> calls;  // per run
    for (int run = 0; run < 7; ++run) {
      CAPTURE(run);
      bindings.at("x") = random_tensor(rng, {DType::f32, {4, 8}}, Values::moderate);
      jit.bind("x", bindings.at("x"));
      if (run == 3) {  // new weights
        bindings.at("w") = random_tensor(rng, {DType::f32, {8, 4}}, Values::moderate);
        jit.bind("w", bindings.at("w"));
      }
      if (run == 5) jit.bind("b", jit.unbind("b"));  // any param bound again
      const size_t before = jit.run_profile().calls.size();
      jit.run();
      calls.push_back(jit.run_profile().calls.size() - before);
      check_against_interpreter(jit, bindings);
    }
    CHECK(calls == std::vector<size_t>{all, all - 1, all - 1, all, all - 1, all, all - 1});
  }
}

TEST_CASE("--check-numerics checks invariant results at every run, as if they were made anew") {
  const Graph g = parse_kir(R"(graph @g {
  input %x : f32[2,3]
  param %w : f32[3,3]
  %e = exp(%w) : f32[3,3]
  %y = matmul(%x, %e) : f32[2,3]
  output %y
}
)",
                            "g.kir");
  const auto bind = [](JitExecutable& jit) {
    jit.bind("x", Tensor::zeros({DType::f32, {2, 3}}));
    Tensor w = Tensor::zeros({DType::f32, {3, 3}});
    w.f32()(1, 2) = 100.0f;  // exp overflows
    jit.bind("w", std::move(w));
  };
  const auto error_of = [](JitExecutable& jit) -> std::string {
    try {
      jit.run();
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  JitExecutable checked_from_the_start(g, no_passes());
  bind(checked_from_the_start);
  checked_from_the_start.check_numerics(true);
  const std::string expected = error_of(checked_from_the_start);
  CAPTURE(expected);
  CHECK(expected.find("check-numerics: %e (f32[3,3]) holds inf at [1, 2], the run's first nan or inf; made by kernel "
                      "call 0 of 2") == 0);
  // Checked only from the second run on, when %e is already made.
  JitExecutable jit(g, no_passes());
  bind(jit);
  REQUIRE(invariant_calls(jit) == 1);
  jit.run();
  jit.check_numerics(true);
  CHECK(error_of(jit) == expected);
}

TEST_CASE("a run-time error in an invariant call is raised at every run until the param is bound anew") {
  const Graph g = parse_kir(R"(graph @g {
  input %x : f32[2,3]
  param %table : f32[5,3]
  param %idx : i32[2]
  %rows = gather(%table, %idx) : f32[2,3]
  %y = add(%x, %rows) : f32[2,3]
  output %y
}
)",
                            "g.kir");
  JitExecutable jit(g);
  REQUIRE(invariant_calls(jit) == 1);  // the gather, a kernel of its own
  Rng rng(23);
  std::map<std::string, Tensor> bindings = random_bindings(g, rng, Values::moderate);
  bindings.at("idx") = Tensor(Tensor::I32{0, 7});
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  for (int run = 0; run < 2; ++run)
    CHECK_THROWS_WITH_AS(
        jit.run(), doctest::Contains("gather: index 7 (at flat position 1 of the indices) is out of range"), Error);
  bindings.at("idx") = Tensor(Tensor::I32{4, 1});
  jit.bind("idx", bindings.at("idx"));
  jit.run();
  check_against_interpreter(jit, bindings);
}

TEST_CASE("a param the graph assigns makes nothing invariant; a training step equals the interpreter's") {
  const Graph g = parse_kir(R"(graph @train {
  input %x : f32[4,8]
  param %w : f32[8,4]
  input %lr : f32[]
  %h = matmul(%x, %w) : f32[4,4]
  %g = matmul(%x, %h) {transpose_a=true} : f32[8,4]
  %step = mul(%g, %lr) : f32[8,4]
  %next = sub(%w, %step) : f32[8,4]
  assign(%w, %next)
  output %h
}
)",
                            "train.kir");
  CHECK(invariant_calls(JitExecutable(g)) == 0);
  Rng rng(29);
  std::map<std::string, Tensor> bindings = random_bindings(g, rng, Values::moderate);
  bindings.at("lr") = Tensor::scalar(0.01f);
  check_jit_matches_interpreter(g, bindings, {1e-4, 1e-4}, 3);
}
