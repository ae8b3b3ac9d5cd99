// The autodiff driver itself: accumulation, broadcasting, pruning, cuts, naming, errors.
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/verifier.h"
#include "gradcheck.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/identity.h"
#include "ops/reduction.h"

using namespace kiln;

namespace {

// Runs the graph with `inputs` bound by name and returns the named output.
Tensor run_and_get(const Graph& g, const std::vector<std::pair<std::string, Tensor>>& inputs, const std::string& out) {
  Interpreter exe(g);
  for (const auto& [name, t] : inputs) exe.bind(name, t);
  exe.run();
  return exe.output(out);
}

const TensorType f32_3{DType::f32, {3}};

}  // namespace

TEST_CASE("fan-out gradients accumulate: d/dx sum(x*x + x) = 2x + 1") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value loss = ops::sum(b, ops::add(b, ops::mul(b, x, x), x));
  const std::vector<Value> dx = grad(g, loss, {x});
  CHECK(g.name_of(dx[0]) == "x.grad");
  b.output(dx[0]);
  verify(g);
  const Tensor got = run_and_get(g, {{"x", Tensor(Tensor::F32{1.0f, -2.0f, 0.5f})}}, "x.grad");
  CHECK(got.f32() == Tensor::F32{3.0f, -3.0f, 2.0f});
}

TEST_CASE("broadcast operands get gradients summed back to their shape") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value w = b.input("w", {DType::f32, {2, 3}});
  const Value s = b.input("s", {DType::f32, {}});
  const Value loss = ops::sum(b, ops::mul(b, ops::add(b, x, w), s));
  const std::vector<Value> d = grad(g, loss, {x, w, s});
  CHECK(g.type(d[0]) == f32_3);
  CHECK(g.type(d[1]) == TensorType{DType::f32, {2, 3}});
  CHECK(g.type(d[2]) == TensorType{DType::f32, {}});
  for (Value v : d) b.output(v);
  Interpreter exe(g);
  exe.bind("x", Tensor(Tensor::F32{1.0f, 2.0f, 3.0f}));
  exe.bind("w", Tensor(Tensor::F32{{1.0f, 1.0f, 1.0f}, {2.0f, 2.0f, 2.0f}}));
  exe.bind("s", Tensor::scalar(0.5f));
  exe.run();
  CHECK(exe.output("x.grad").f32() == Tensor::F32{1.0f, 1.0f, 1.0f});  // 2 rows * 0.5
  CHECK(exe.output("w.grad").f32() == Tensor::F32{{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}});
  CHECK(exe.output("s.grad").f32()() == doctest::Approx(21.0));  // sum(x + w)
}

TEST_CASE("paths that do not reach the loss get no backward nodes") {
  auto backward_nodes = [](bool with_side_branch) {
    Graph g;
    Builder b(g);
    const Value x = b.input("x", f32_3);
    const Value loss = ops::sum(b, ops::mul(b, x, x));
    if (with_side_branch) b.output(ops::exp(b, ops::tanh(b, x)));  // uses x, not on the loss path
    const size_t before = g.nodes().size();
    grad(g, loss, {x});
    return g.nodes().size() - before;
  };
  CHECK(backward_nodes(true) == backward_nodes(false));
}

TEST_CASE("a wrt the loss does not depend on gets zeros") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value unused = b.input("u", {DType::f32, {2}});
  const Value loss = ops::sum(b, x);
  const Value du = grad(g, loss, {unused})[0];
  b.output(du);
  const Tensor got = run_and_get(g, {{"x", Tensor(Tensor::F32{1, 2, 3})}, {"u", Tensor(Tensor::F32{5, 6})}}, "u.grad");
  CHECK(got.f32() == Tensor::F32{0.0f, 0.0f});
}

TEST_CASE("integer operands get no gradient; the float table does") {
  Graph g;
  Builder b(g);
  const Value table = b.input("table", {DType::f32, {4, 2}});
  const Value idx = b.input("idx", {DType::i32, {3}});
  const Value loss = ops::sum(b, ops::gather(b, table, idx));
  CHECK_THROWS_WITH_AS(grad(g, loss, {idx}), doctest::Contains("only f32 values have gradients"), Error);
  const Value dt = grad(g, loss, {table})[0];
  b.output(dt);
  const Tensor got = run_and_get(
      g, {{"table", Tensor(Tensor::F32(xt::zeros<float>({4, 2})))}, {"idx", Tensor(Tensor::I32{1, 3, 1})}},
      "table.grad");
  CHECK(got.f32() == Tensor::F32{{0, 0}, {2, 2}, {0, 0}, {1, 1}});
}

TEST_CASE("stop_gradient cuts the path: d/dx sum(x * stop(x)) = x") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value loss = ops::sum(b, ops::mul(b, x, ops::stop_gradient(b, x)));
  b.output(grad(g, loss, {x})[0]);
  const Tensor got = run_and_get(g, {{"x", Tensor(Tensor::F32{1.0f, -2.0f, 4.0f})}}, "x.grad");
  CHECK(got.f32() == Tensor::F32{1.0f, -2.0f, 4.0f});
}

TEST_CASE("ops without a gradient rule are all named, and the graph is left unchanged") {
  for (const char* name : {"test_no_rule_a", "test_no_rule_b"}) {
    if (OpRegistry::global().find(name)) continue;
    OpRegistry::global().add(
        OpDef{.name = name,
              .min_operands = 1,
              .max_operands = 1,
              .infer = [](const std::vector<TensorType>& in, const Attrs&) { return std::vector<TensorType>{in[0]}; }});
  }
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value y = b.emit1("test_no_rule_b", {b.emit1("test_no_rule_a", {ops::exp(b, x)})});
  const Value loss = ops::sum(b, y);
  const size_t nodes = g.nodes().size(), values = g.num_values();
  CHECK_THROWS_WITH_AS(grad(g, loss, {x}), doctest::Contains("test_no_rule_a, test_no_rule_b"), Error);
  CHECK(g.nodes().size() == nodes);
  CHECK(g.num_values() == values);
}

TEST_CASE("gradients get <wrt>.grad names even when two wrt share one gradient value") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value y = b.input("y", f32_3);
  const Value loss = ops::sum(b, ops::add(b, x, y));
  const std::vector<Value> d = grad(g, loss, {x, y});
  CHECK(g.name_of(d[0]) == "x.grad");
  CHECK(g.name_of(d[1]) == "y.grad");
  verify(g);
}

TEST_CASE("the loss must be an f32 scalar") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  CHECK_THROWS_WITH_AS(grad(g, ops::exp(b, x), {x}), doctest::Contains("must be an f32 scalar"), Error);
}

TEST_CASE("a seed weights every gradient from the start: d/dx of w * sum(x*x) with seed w = 2wx, no multiply after") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value w = b.input("w", {DType::f32, {}});
  const Value loss = ops::sum(b, ops::mul(b, x, x));
  const size_t forward = g.nodes().size();
  const std::vector<Value> dx = grad(g, loss, {x}, w);
  b.output(dx[0]);
  verify(g);
  // The seed is read where the backward pass starts, not by a multiply of the gradient at its end.
  CHECK(g.producer(dx[0]).op() != "mul");
  size_t seed_reader = g.nodes().size();
  for (size_t i = forward; i < g.nodes().size(); ++i)
    for (Value v : g.nodes()[i].operands)
      if (v == w) seed_reader = std::min(seed_reader, i);
  CHECK(seed_reader == forward);
  const Tensor got = run_and_get(g, {{"x", Tensor(Tensor::F32{1.0f, -2.0f, 0.5f})}, {"w", Tensor::scalar(0.25f)}}, "x.grad");
  CHECK(got.f32() == Tensor::F32{0.5f, -1.0f, 0.25f});
  CHECK_THROWS_WITH_AS(grad(g, loss, {x}, x), doctest::Contains("seed %x must be an f32 scalar like the loss"), Error);
}

TEST_CASE("grad of grad: d/dx of sum(d/dx sum(x^3)) = 6x") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value loss = ops::sum(b, ops::mul(b, ops::mul(b, x, x), x));
  const Value dx = grad(g, loss, {x})[0];  // 3x^2
  const Value ddx = grad(g, ops::sum(b, dx), {x})[0];
  b.output(ddx);
  const Tensor got = run_and_get(g, {{"x", Tensor(Tensor::F32{1.0f, -2.0f, 0.5f})}}, g.name_of(ddx));
  CHECK(got.f32() == Tensor::F32{6.0f, -12.0f, 3.0f});
}

TEST_CASE("a gradient's nodes are the backward of the scopes they differentiate") {
  Graph g("g");
  Builder b(g);
  const Value x = b.input("x", f32_3);
  const Value w = b.param("w", f32_3);
  Value h, loss;
  {
    const Builder::Scope s(b, "layer");
    h = ops::mul(b, x, w);
  }
  {
    const Builder::Scope s(b, "loss");
    loss = ops::sum(b, ops::mul(b, h, h), {0});
  }
  const size_t forward_nodes = g.nodes().size();
  const Value gw = grad(g, loss, {w})[0];
  CHECK(g.producer(gw).loc.scopes == std::vector<std::string>{"layer (backward)"});
  // Every node grad added is a backward one: of the layer's product or of the loss's.
  size_t loss_backward = 0;
  for (size_t i = forward_nodes; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    REQUIRE(n.loc.scopes.size() == 1);
    CHECK(is_backward_scope(n.loc.scopes[0]));
    loss_backward += n.loc.scopes[0] == "loss (backward)";
  }
  CHECK(loss_backward > 0);
}
