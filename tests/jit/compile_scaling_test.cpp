// Compile time grows with the graph's size, not faster: a value used twice in a
// fusion is emitted once per index (not once per path to it), and a long run of
// fusible ops becomes several kernels of bounded size.
#include <doctest/doctest.h>

#include <sstream>

#include "compiler/pipeline.h"
#include "differential.h"
#include "engine/ir/builder.h"
#include "ops/elementwise.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// x_0 = x, x_1 = tanh(x), x_i = x_{i-1} * 0.5 + x_{i-2} * 0.25 ... as one DAG in
// which each value is used twice: a tree expansion of it has 2^(n/2) leaves.
Graph fibonacci_dag(int n) {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {3, 17}});
  const Value half = b.input("half", {DType::f32, {17}});
  std::vector<Value> v = {x, ops::tanh(b, x)};
  for (int i = 2; i < n; ++i) v.push_back(ops::add(b, ops::mul(b, v[v.size() - 1], half), ops::neg(b, v[v.size() - 2])));
  b.output(v.back());
  return g;
}

}  // namespace

TEST_CASE("a fused DAG of shared values compiles in moments and matches the interpreter") {
  // 60 levels: without reuse, 2^30 copies of tanh.
  const Graph g = fibonacci_dag(60);
  Rng rng(5);
  auto bindings = random_bindings(g, rng);
  bindings.at("half").f32().fill(0.5f);
  check_jit_matches_interpreter(g, bindings, {1e-6, 1e-5});
}

TEST_CASE("a long chain of fusible ops becomes kernels of at most 64 nodes, and says why") {
  Graph g;
  Builder b(g);
  Value v = b.input("x", {DType::f32, {33}});
  for (int i = 0; i < 300; ++i) v = i % 2 ? ops::tanh(b, v) : ops::neg(b, v);
  b.output(v);
  std::ostringstream decisions;
  compiler::PipelineOptions o;
  o.passes.remarks = &decisions;
  const Graph fused = compiler::compile_graph(g, o).graph;
  size_t fusions = 0;
  for (const Node& n : fused.nodes()) {
    REQUIRE(n.body);
    CHECK(n.body->nodes().size() <= 64);
    ++fusions;
  }
  CHECK(fusions == 5);  // ceil(300 / 64)
  CHECK(decisions.str().find("the fusion already holds 64 nodes") != std::string::npos);
}
