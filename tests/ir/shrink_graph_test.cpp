// The graph shrinker (ir/shrink_graph.h) on fusion-biased random graphs with
// predicates standing in for a compiler failure: what it returns still fails,
// and is as small as the predicate allows.
#include <doctest/doctest.h>

#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "ir/fusion_graph.h"
#include "ir/shrink_graph.h"

using namespace kiln;
using namespace kiln::test;

namespace {

bool has_op(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes())
    if (n.op() == op) return true;
  return false;
}

}  // namespace

TEST_CASE("a graph that fails for holding a softmax shrinks to one softmax of an input, every dim 1") {
  int shrunk = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    const Graph g = fusion_graph(seed);
    if (!has_op(g, "softmax")) continue;
    ++shrunk;
    const ShrinkResult r = shrink_graph(g, [](const Graph& v) { return has_op(v, "softmax"); });
    const std::string text = print_kir(r.graph);
    INFO("seed ", seed, "\n", text);
    CHECK(verify_problems(r.graph).empty());
    REQUIRE(r.graph.nodes().size() == 1);
    CHECK(r.graph.nodes()[0].op() == "softmax");
    REQUIRE(r.graph.declarations().size() == 1);
    for (int64_t d : r.graph.type(r.graph.declarations()[0]).shape) CHECK(d == 1);
    CHECK(r.kept > 0);
    CHECK(r.tries >= r.kept);
  }
  CHECK(shrunk > 3);
}

TEST_CASE("the shrinker keeps what the failure needs: an add of a matmul with a dim of 17") {
  const auto fails = [](const Graph& v) {
    for (const Node& n : v.nodes())
      if (n.op() == "add")
        for (Value x : n.operands)
          if (v.value(x).kind == ValueKind::result && v.producer(x).op() == "matmul")
            for (Value y : v.producer(x).operands)
              for (int64_t d : v.type(y).shape)
                if (d == 17) return true;
    return false;
  };
  int shrunk = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const Graph g = fusion_graph(seed);
    if (!fails(g)) continue;
    ++shrunk;
    const ShrinkResult r = shrink_graph(g, fails);
    INFO("seed ", seed, "\n", print_kir(r.graph));
    CHECK(fails(r.graph));
    CHECK(r.graph.nodes().size() == 2);
  }
  CHECK(shrunk > 0);
}

TEST_CASE("the shrinker stops at its budget of tries with a graph that still fails") {
  const Graph g = fusion_graph(3);
  const auto fails = [](const Graph& v) { return !v.nodes().empty(); };
  const ShrinkResult r = shrink_graph(g, fails, 5);
  CHECK(r.tries == 5);
  CHECK(fails(r.graph));
  CHECK(r.graph.nodes().size() < g.nodes().size());
}
