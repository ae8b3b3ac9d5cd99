// Every pass, and the default pipeline, on seeded random graphs (tests/ir/random_graph.h)
// and on graphs with planted patterns: the result verifies, keeps the pass
// invariants, prints and reparses to the same text, and computes the same outputs
// and assigned values on the Interpreter. cse, dce and constant-fold must agree
// bitwise (constant-fold evaluates with the same reference kernels); simplify and
// the pipeline within a tolerance, because x*a*b -> x*(a*b) rounds differently.
#include <doctest/doctest.h>

#include <functional>
#include <map>

#include "compiler/passes/pass_manager.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;
using compiler::PassOptions;

namespace {

constexpr int kRandomGraphs = 200;
// (x*a)*b vs x*(a*b): a few ulp per reassociation, grown by later ops (a sum, a
// softmax) but far below this.
constexpr double kRel = 1e-4, kAbs = 1e-6;

Graph run_one(const Graph& g, const std::string& pass) {
  PassOptions opts;
  opts.verify_each = true;  // verification and the invariants, after the pass
  if (!pass.empty()) opts.passes = {pass};
  return compiler::run_passes(g, opts);
}

// Checks `after` against `before` on random bindings; `exact` demands bitwise equality.
void check_same_results(const Graph& before, const Graph& after, bool exact, uint64_t seed) {
  Rng rng(seed);
  const auto bindings = pass_bindings(before, rng);
  const Observed want = run_interpreter(before, bindings);
  const Observed got = run_interpreter(after, bindings);
  CHECK(compare_observed(want, got, exact ? -1 : kRel, kAbs) == "");
}

// Returns whether the pass changed the graph's text.
bool check_pass(const Graph& g, const std::string& pass, bool exact, uint64_t seed) {
  INFO("pass: ", (pass.empty() ? "default pipeline" : pass), "\n", print_kir(g));
  const Graph out = run_one(g, pass);
  CHECK(compiler::pass_invariant_problems(g, out).empty());
  const std::string text = print_kir(out);
  CHECK(print_kir(parse_kir(text, "optimized.kir")) == text);
  check_same_results(g, out, exact, seed);
  return text != print_kir(g);
}

// Runs every pass and the pipeline on each graph; returns how many graphs each changed.
std::map<std::string, int> check_all_passes(const std::function<Graph(uint64_t)>& make) {
  std::map<std::string, int> changed;
  for (uint64_t seed = 0; seed < kRandomGraphs; ++seed) {
    const Graph g = make(seed);
    for (const char* pass : {"cse", "dce", "constant-fold"}) changed[pass] += check_pass(g, pass, true, seed);
    changed["simplify"] += check_pass(g, "simplify", false, seed);
    changed["pipeline"] += check_pass(g, "", false, seed);
  }
  return changed;
}

}  // namespace

TEST_CASE("each pass and the pipeline keep random graphs' results") {
  const auto changed = check_all_passes([](uint64_t seed) { return random_graph(seed); });
  // None is vacuous here (seeds 0-199 change: constant-fold 110, simplify 147, cse 16, dce and the pipeline 200).
  for (const auto& [pass, n] : changed) CHECK(n > 0);
}

TEST_CASE("each pass and the pipeline keep planted graphs' results, and each rewrites many of them") {
  const auto changed = check_all_passes([](uint64_t seed) { return planted_graph(seed, 10); });
  for (const auto& [pass, n] : changed) CHECK(n > kRandomGraphs / 2);
}

TEST_CASE("the pipeline removes at least one node per planted pattern, outputs aside") {
  constexpr int kPatterns = 10;
  for (uint64_t seed = 0; seed < kRandomGraphs; ++seed) {
    const Graph g = planted_graph(seed, kPatterns);
    INFO(print_kir(g));
    const Graph out = run_one(g, "");
    // An output whose value a rule replaces by a declaration or another output
    // gets an identity to carry its name: at most one per output.
    CHECK(out.nodes().size() + kPatterns - g.outputs().size() <= g.nodes().size());
  }
}

TEST_CASE("one sweep of each pass reaches its fixpoint on planted graphs") {
  for (uint64_t seed = 0; seed < kRandomGraphs; ++seed) {
    const Graph g = planted_graph(seed, 10);
    INFO(print_kir(g));
    // simplify leaves the nodes it bypasses for dce.
    const Graph s = run_one(run_one(g, "simplify"), "dce");
    CHECK(print_kir(run_one(run_one(s, "simplify"), "dce")) == print_kir(s));
    for (const char* pass : {"constant-fold", "cse", "dce"}) {
      const Graph once = run_one(g, pass);
      CHECK(print_kir(run_one(once, pass)) == print_kir(once));
    }
    const Graph pipeline = run_one(g, "");
    CHECK(print_kir(run_one(pipeline, "")) == print_kir(pipeline));
  }
}
