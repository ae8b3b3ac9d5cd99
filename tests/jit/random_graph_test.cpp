// Whole random graphs (tests/ir/random_graph.h) through both backends. Graphs
// using an op that has no JIT lowering yet are skipped and counted, until every
// op is lowered. Tolerance: abs 1e-4 + rel 1e-4, room for chains of fast exp/log/
// tanh and f32 sums; a graph whose run the interpreter rejects (an integer
// division by zero) must be rejected by the JIT with the same message.
#include <doctest/doctest.h>

#include "compiler/codegen/lower_graph.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("jit matches the interpreter on random graphs") {
  int skipped = 0, run = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const Graph g = random_graph(seed);
    try {
      compiler::check_lowerable(g);
    } catch (const Error&) {
      ++skipped;
      continue;
    }
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
    ++run;
  }
  MESSAGE(run << " random graphs compared, " << skipped << " skipped for ops without a JIT lowering");
  CHECK(run > 0);
}
