#include <doctest/doctest.h>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/verifier.h"

using namespace kiln;

TEST_CASE("broadcast_shapes follows numpy") {
  CHECK(broadcast_shapes({2, 3}, {3}) == Shape{2, 3});
  CHECK(broadcast_shapes({2, 1}, {1, 4}) == Shape{2, 4});
  CHECK(broadcast_shapes({}, {5, 1}) == Shape{5, 1});
  CHECK(broadcast_shapes({1}, {}) == Shape{1});
  CHECK_THROWS_AS(broadcast_shapes({2, 3}, {4}), Error);
}

TEST_CASE("graph names are unique and fresh names avoid collisions") {
  Graph g("t");
  g.declare(ValueKind::input, "x", {DType::f32, {2}});
  CHECK_THROWS_AS(g.declare(ValueKind::param, "x", {DType::f32, {2}}), Error);
  CHECK_THROWS_AS(g.declare(ValueKind::param, "bad name", {DType::f32, {2}}), Error);
  CHECK(g.fresh_name("x") == "x_1");
  CHECK(g.fresh_name() == "0");
}

TEST_CASE("builder rejects unknown ops") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2}});
  CHECK_THROWS_WITH_AS(b.emit1("no_such_op", {x}), "unknown op 'no_such_op'", Error);
  CHECK(verify_problems(g).empty());
}

TEST_CASE("references into the graph survive thousands of later nodes and declarations") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 3}});
  const Value y = b.emit1("exp", {x}, {}, "y");
  const TensorType& x_type = b.type(x);
  const std::string& y_name = g.name_of(y);
  const Node& y_node = g.producer(y);
  for (int i = 0; i < 5000; ++i) {
    b.emit1("exp", {y});
    b.state("s_" + std::to_string(i), {DType::i32, {i % 7}});
  }
  CHECK(x_type == TensorType{DType::f32, {2, 3}});
  CHECK(y_name == "y");
  CHECK(y_node.op() == "exp");
  CHECK(y_node.results == std::vector<Value>{y});
  CHECK(&g.nodes().front() == &y_node);
}
