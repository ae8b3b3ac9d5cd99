// Whole random graphs (tests/ir/random_graph.h) through both backends, fused
// (the default pipeline) and, for every fourth, unfused too; every op they use
// has a lowering. Tolerance: abs 1e-4 + rel 1e-4, room for chains of fast exp/log/
// tanh and f32 sums; a graph whose run the interpreter rejects (an integer
// division by zero) must be rejected by the JIT with the same message.
#include <doctest/doctest.h>

#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("jit matches the interpreter on random graphs") {
  int run = 0;
  compiler::JitOptions unfused;
  unfused.pipeline.passes.passes = {"constant-fold", "simplify", "cse", "dce"};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const Graph g = random_graph(seed);
    INFO("seed " << seed << "\n" << print_kir(g));
    Rng rng(seed);
    const auto bindings = random_bindings(g, rng, Values::moderate);
    Interpreter interp(g);
    for (const auto& [name, t] : bindings) interp.bind(name, t);
    try {
      interp.run();
    } catch (const Error& e) {
      compiler::JitExecutable jit(g);
      for (const auto& [name, t] : bindings) jit.bind(name, t);
      CHECK_THROWS_WITH_AS(jit.run(), e.what(), Error);
      continue;
    }
    check_jit_matches_interpreter(g, bindings, {1e-4, 1e-4}, 2);
    if (seed % 4 == 0) check_jit_matches_interpreter(g, bindings, {1e-4, 1e-4}, 2, unfused);
    ++run;
  }
  CHECK(run > 150);  // the rest stop at a run-time error in both backends
}
