// allreduce-buckets: a data-parallel step's allreduces in buckets, each right
// after its last operand is made.
#include <doctest/doctest.h>

#include <sstream>

#include "compiler/passes/passes.h"
#include "engine/ir/builder.h"
#include "ops/collective.h"
#include "ops/elementwise.h"
#include "passes/kir_graph.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// Gradients made one after another (exp of each input), each summed over the
// ranks, all read at the end: a training step's shape.
Graph step_of(const std::vector<int64_t>& sizes) {
  Graph g("step");
  Builder b(g);
  std::vector<Value> sums;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Value x = b.input("x" + std::to_string(i), {DType::f32, {sizes[i]}});
    sums.push_back(ops::exp(b, x));
  }
  for (Value& s : sums) s = ops::allreduce(b, s);
  for (Value s : sums) b.output(ops::neg(b, s));
  return g;
}

// Node indices of a graph's allreduces.
std::vector<size_t> allreduce_nodes(const Graph& g) {
  std::vector<size_t> out;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (g.nodes()[i].op() == "allreduce") out.push_back(i);
  return out;
}

std::map<std::string, Tensor> inputs_of(const Graph& g) {
  std::map<std::string, Tensor> in;
  for (Value v : g.declarations()) {
    Tensor::F32 a = Tensor::F32::from_shape(xt_shape(g.type(v).shape));
    for (size_t i = 0; i < a.size(); ++i) a.data()[i] = static_cast<float>(i % 7) * 0.25f - 0.5f;
    in.emplace(g.name_of(v), Tensor(std::move(a)));
  }
  return in;
}

}  // namespace

TEST_CASE("ten 1 MiB gradients go in buckets of 4 MiB, each right after its last gradient is made") {
  const Graph g = step_of(std::vector<int64_t>(10, 1 << 18));
  std::ostringstream remarks;
  const Graph out = compiler::allreduce_buckets(g, &remarks);
  const std::vector<size_t> buckets = allreduce_nodes(out);
  REQUIRE(buckets.size() == 3);  // 4 + 4 + 2 MiB
  CHECK(out.type(out.nodes()[buckets[0]].results[0]) == TensorType{DType::f32, {4 << 18}});
  CHECK(out.type(out.nodes()[buckets[2]].results[0]) == TensorType{DType::f32, {2 << 18}});
  // Each bucket's concat follows its 4th exp directly, before the next exp: the
  // sum starts while the next gradients are made.
  for (size_t k = 0; k < 2; ++k) {
    const size_t at = buckets[k];
    CHECK(out.nodes()[at - 1].op() == "concat");
    CHECK(out.nodes()[at + 1].op() == "exp");
  }
  CHECK(remarks.str().find("allreduce-buckets: bucket0: 4 allreduce(s), 4194304 bytes, after node 3 (exp)") !=
        std::string::npos);
  CHECK(compare_observed(run_interpreter(g, inputs_of(g)), run_interpreter(out, inputs_of(g))) == "");
}

TEST_CASE("allreduce-buckets keeps a single small gradient as it is, and buckets by dtype") {
  const Graph one = compiler::allreduce_buckets(step_of({5}));
  REQUIRE(allreduce_nodes(one).size() == 1);
  CHECK(one.type(one.nodes()[allreduce_nodes(one)[0]].operands[0]) == TensorType{DType::f32, {5}});
  const Graph mixed =
      kir("  input %a : f32[3]\n  input %n : i32[2]\n  %ea = exp(%a) : f32[3]\n  %sa = allreduce(%ea) : f32[3]\n"
          "  %sn = allreduce(%n) : i32[2]\n  %sb = allreduce(%ea) : f32[3]\n  output %sa\n  output %sn\n  output %sb\n");
  const Graph out = compiler::allreduce_buckets(mixed);
  CHECK(allreduce_nodes(out).size() == 2);  // i32 alone, both f32 in one bucket
  CHECK(node_lines(after(mixed, {"allreduce-buckets"})).find("allreduce") != std::string::npos);
}

TEST_CASE("a bucket ends before a gradient whose sum is read before the next gradient is made") {
  // sum(g1) feeds the making of g2: they cannot share a bucket (its sum would
  // have to wait for g2, which waits for it).
  const Graph g = kir(
      "  input %x : f32[4]\n  %g1 = exp(%x) : f32[4]\n  %s1 = allreduce(%g1) : f32[4]\n"
      "  %g2 = mul(%s1, %x) : f32[4]\n  %s2 = allreduce(%g2) : f32[4]\n  output %s2\n");
  const Graph out = after(g, {"allreduce-buckets"});
  CHECK(allreduce_nodes(out).size() == 2);
  CHECK(compare_observed(run_interpreter(g, inputs_of(g)), run_interpreter(out, inputs_of(g))) == "");
}
