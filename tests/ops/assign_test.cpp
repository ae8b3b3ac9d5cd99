#include <doctest/doctest.h>

#include "engine/ir/verifier.h"
#include "ops/assign.h"
#include "ops/elementwise.h"
#include "ops/op_test_util.h"

using namespace kiln;
using kiln::test::build_error;
using kiln::test::check_equal;
using F = Tensor::F32;

TEST_CASE("assign updates a param when the step ends and the step sees the old value") {
  Graph g("step");
  Builder b(g);
  const Value w = b.param("w", {DType::f32, {2}});
  const Value x = b.input("x", {DType::f32, {2}});
  ops::assign(b, w, ops::add(b, w, x));  // w := w + x
  const Value seen = ops::mul(b, w, x);  // emitted after the assign, still reads the old w
  b.output(seen);
  CHECK(verify_problems(g).empty());
  Interpreter interp(std::move(g));
  const std::string out = interp.graph().name_of(seen);
  interp.bind("w", Tensor(F{1.0f, 2.0f}));
  interp.bind("x", Tensor(F{10.0f, 0.5f}));
  interp.run();
  check_equal(interp.output(out), F{10.0f, 1.0f});  // old w * x
  check_equal(interp.binding("w"), F{11.0f, 2.5f});
  interp.run();
  check_equal(interp.output(out), F{110.0f, 1.25f});  // w from step 1 * x
  check_equal(interp.binding("w"), F{21.0f, 3.0f});
}

TEST_CASE("assign of a state counter and of a param in the same step") {
  Graph g("two");
  Builder b(g);
  const Value step = b.state("step", {DType::i32, {}});
  const Value one = b.input("one", {DType::i32, {}});
  const Value w = b.param("w", {DType::f32, {2}});
  ops::assign(b, step, ops::add(b, step, one));
  ops::assign(b, w, ops::add(b, w, w));
  Interpreter interp(std::move(g));
  interp.bind("step", Tensor(Tensor::I32(0)));
  interp.bind("one", Tensor(Tensor::I32(1)));
  interp.bind("w", Tensor(F{1.0f, -1.0f}));
  for (int i = 0; i < 3; ++i) interp.run();
  check_equal(interp.binding("step"), Tensor::I32(3));
  check_equal(interp.binding("w"), F{8.0f, -8.0f});
}

TEST_CASE("assign has no results and needs the target's exact type") {
  Graph g("assign");
  Builder b(g);
  const Value w = b.param("w", {DType::f32, {2}});
  CHECK(b.emit("assign", {w, b.input("x", {DType::f32, {2}})}).empty());
  CHECK(build_error("assign", {{DType::f32, {2}}, {DType::f32, {3}}}) ==
        "assign(f32[2], f32[3]): value's type f32[3] differs from the target's f32[2]");
  CHECK(build_error("assign", {{DType::f32, {2}}, {DType::i32, {2}}}) ==
        "assign(f32[2], i32[2]): value's type i32[2] differs from the target's f32[2]");
  CHECK(build_error("assign", {{DType::f32, {2}}}) == "assign(f32[2]): expects 2 operand(s), got 1");
  const OpDef* def = OpRegistry::global().find("assign");
  REQUIRE(def);
  CHECK(def->side_effect);
}

TEST_CASE("the verifier rejects assigning an input or assigning twice") {
  Graph g("bad");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2}});
  const Value w = b.param("w", {DType::f32, {2}});
  // The Builder refuses both mistakes (tests/ir/graph_test.cpp); a graph put
  // together node by node, as the parser does, can still hold them.
  const OpDef* assign = OpRegistry::global().find("assign");
  g.add_node(assign, {x, w}, {}, {}, {});
  g.add_node(assign, {w, x}, {}, {}, {});
  g.add_node(assign, {w, x}, {}, {}, {});
  const std::vector<std::string> problems = verify_problems(g);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].find("target %x is not a param or state") != std::string::npos);
  CHECK(problems[1].find("%w is assigned more than once") != std::string::npos);
}
