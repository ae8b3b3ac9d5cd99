// The elementwise ops' reference kernels where a row of the op table cannot say
// it: i32 division by zero, error messages, the builder helpers. Their results
// on random, broadcast and special values are checked against each row's
// expected function (tests/op_table/).
#include <doctest/doctest.h>

#include <limits>

#include "op_test_util.h"
#include "ops/elementwise.h"

using namespace kiln;
using test::check_equal;
using test::run_op1;
using F = xt::xarray<float>;
using I = xt::xarray<int32_t>;

TEST_CASE("i32 div truncates toward zero and rejects division by zero") {
  check_equal(run_op1("div", {I{7, -7, 7, -7, 6}, I{2, 2, -2, -2, 3}}), I{3, -3, -3, 3, 2});
  CHECK_THROWS_WITH_AS(run_op1("div", {I{1, 2}, I{1, 0}}), "div: integer division by zero", Error);
}

TEST_CASE("inference errors name the op and operands and the problem") {
  using test::build_error;
  const std::string incompatible = build_error("add", {{DType::f32, {2, 3}}, {DType::f32, {4}}});
  CHECK(incompatible.find("add(f32[2,3], f32[4])") != std::string::npos);
  CHECK(incompatible.find("incompatible") != std::string::npos);

  CHECK(build_error("exp", {{DType::i32, {2}}}) == "exp(i32[2]): operand 0 must be f32, got i32");
  CHECK(build_error("add", {{DType::f32, {2}}, {DType::i32, {2}}}) ==
        "add(f32[2], i32[2]): operands must have the same dtype, got f32 and i32");
  CHECK(build_error("add", {{DType::boolean, {2}}, {DType::boolean, {2}}}) ==
        "add(bool[2], bool[2]): operand 0 must be f32 or i32, got bool");
  CHECK(build_error("pow", {{DType::i32, {}}, {DType::i32, {}}}) == "pow(i32[], i32[]): operand 0 must be f32, got i32");
  CHECK(build_error("less", {{DType::boolean, {}}, {DType::boolean, {}}}) ==
        "less(bool[], bool[]): operand 0 must be f32 or i32, got bool");
  CHECK(build_error("logical_and", {{DType::f32, {}}, {DType::boolean, {}}}) ==
        "logical_and(f32[], bool[]): operand 0 must be bool, got f32");
  CHECK(build_error("select", {{DType::f32, {2}}, {DType::f32, {2}}, {DType::f32, {2}}}) ==
        "select(f32[2], f32[2], f32[2]): condition (operand 0) must be bool, got f32");
  CHECK(build_error("select", {{DType::boolean, {2}}, {DType::f32, {2}}, {DType::i32, {2}}}) ==
        "select(bool[2], f32[2], i32[2]): operands must have the same dtype, got f32 and i32");
  CHECK(build_error("select", {{DType::boolean, {3}}, {DType::f32, {2}}, {DType::f32, {2}}}).find("incompatible") !=
        std::string::npos);
  CHECK(build_error("cast", {{DType::f32, {2}}}) == "cast(f32[2]): op 'cast' requires attribute 'dtype' (dtype)");
  CHECK(build_error("add", {{DType::f32, {2}}, {DType::f32, {2}}}, {{"axis", int64_t{0}}}) ==
        "add(f32[2], f32[2]): unknown attribute 'axis' for op 'add'");
  CHECK(build_error("neg", {{DType::f32, {2}}, {DType::f32, {2}}}) ==
        "neg(f32[2], f32[2]): expects 1 operand(s), got 2");
}

TEST_CASE("builder helpers emit the ops with inferred types") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 3}});
  const Value y = b.input("y", {DType::f32, {3}});
  const Value m = ops::less(b, x, y);
  CHECK(g.type(m) == TensorType{DType::boolean, {2, 3}});
  const Value s = ops::select(b, m, ops::neg(b, x), ops::relu(b, y));
  CHECK(g.producer(s).op() == "select");
  const Value c = ops::cast(b, s, DType::i32);
  CHECK(g.type(c) == TensorType{DType::i32, {2, 3}});
  b.output(c);
  Interpreter run(std::move(g));
  run.bind("x", Tensor(F{{1.0f, -2.0f, 3.0f}, {-4.0f, 5.0f, 6.5f}}));
  run.bind("y", Tensor(F{2.0f, -1.0f, 7.0f}));
  run.run();
  // x < y: [[T,T,T],[T,F,T]] -> -x where true, relu(y) = [2,0,7] elsewhere.
  check_equal(run.output(run.graph().name_of(c)), I{{-1, 2, -3}, {4, 0, -6}});
}

TEST_CASE("i32 add, sub, mul and neg wrap around as the JIT's do, with no undefined behaviour") {
  const int32_t max = std::numeric_limits<int32_t>::max(), min = std::numeric_limits<int32_t>::min();
  check_equal(run_op1("add", {I{max, 1}, I{1, 2}}), I{min, 3});
  check_equal(run_op1("sub", {I{min, 5}, I{1, 7}}), I{max, -2});
  check_equal(run_op1("mul", {I{956301314, -3}, I{4, 5}}), I{-469762040, -15});
  check_equal(run_op1("neg", {I{min, 4}}), I{min, -4});
}
