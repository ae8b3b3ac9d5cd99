#include <doctest/doctest.h>

#include <limits>

#include "op_test_util.h"
#include "ops/elementwise.h"

using namespace kiln;
using test::check_close;
using test::check_equal;
using test::run_op1;
using test::shaped;
using F = xt::xarray<float>;
using I = xt::xarray<int32_t>;
using B = xt::xarray<bool>;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("unary f32 ops") {
  check_close(run_op1("neg", {F{-1.0f, 0.0f, 2.5f}}), F{1.0f, 0.0f, -2.5f});
  check_close(run_op1("exp", {F{0.0f, 1.0f, -kInf}}), F{1.0f, 2.7182817f, 0.0f});
  check_close(run_op1("log", {F{1.0f, 2.7182817f, 0.0f}}), F{0.0f, 1.0f, -kInf});
  check_close(run_op1("sqrt", {F{0.0f, 4.0f, 2.25f}}), F{0.0f, 2.0f, 1.5f});
  check_close(run_op1("rsqrt", {F{4.0f, 0.25f, 1.0f}}), F{0.5f, 2.0f, 1.0f});
  check_close(run_op1("tanh", {F{0.0f, 1.0f, -1.0f}}), F{0.0f, 0.7615942f, -0.7615942f});
  check_close(run_op1("relu", {F{{-2.0f, 0.0f}, {3.0f, -0.5f}}}), F{{0.0f, 0.0f}, {3.0f, 0.0f}});
}

TEST_CASE("unary ops on scalars and on i32 and bool") {
  check_close(run_op1("exp", {F(0.0f)}), F(1.0f));
  check_equal(run_op1("neg", {shaped<int32_t>({1, 2}, {3, -4})}), shaped<int32_t>({1, 2}, {-3, 4}));
  check_equal(run_op1("logical_not", {B{true, false}}), B{false, true});
}

TEST_CASE("binary arithmetic") {
  check_close(run_op1("add", {F{1.0f, 2.0f}, F{10.0f, 20.0f}}), F{11.0f, 22.0f});
  check_close(run_op1("sub", {F{1.0f, 2.0f}, F{10.0f, 20.0f}}), F{-9.0f, -18.0f});
  check_close(run_op1("mul", {F{1.5f, -2.0f}, F{2.0f, 3.0f}}), F{3.0f, -6.0f});
  check_close(run_op1("div", {F{1.0f, -3.0f, 1.0f}, F{4.0f, 2.0f, 0.0f}}), F{0.25f, -1.5f, kInf});
  check_close(run_op1("pow", {F{2.0f, 9.0f, 5.0f}, F{3.0f, 0.5f, 0.0f}}), F{8.0f, 3.0f, 1.0f});
  check_close(run_op1("maximum", {F{1.0f, -2.0f}, F{0.0f, 3.0f}}), F{1.0f, 3.0f});
  check_close(run_op1("minimum", {F{1.0f, -2.0f}, F{0.0f, 3.0f}}), F{0.0f, -2.0f});
  check_equal(run_op1("add", {I{1, 2}, I{10, -20}}), I{11, -18});
  check_equal(run_op1("mul", {I{3, -2}, I{4, 5}}), I{12, -10});
  check_equal(run_op1("maximum", {I{3, -2}, I{4, -5}}), I{4, -2});
  check_equal(run_op1("minimum", {I{3, -2}, I{4, -5}}), I{3, -5});
}

TEST_CASE("i32 div truncates toward zero and rejects division by zero") {
  check_equal(run_op1("div", {I{7, -7, 7, -7, 6}, I{2, 2, -2, -2, 3}}), I{3, -3, -3, 3, 2});
  CHECK_THROWS_WITH_AS(run_op1("div", {I{1, 2}, I{1, 0}}), "div: integer division by zero", Error);
}

TEST_CASE("broadcasting") {
  SUBCASE("size-1 dims on either side") {
    check_close(run_op1("add", {shaped<float>({2, 1}, {1.0f, 2.0f}), shaped<float>({1, 3}, {10.0f, 20.0f, 30.0f})}),
                F{{11.0f, 21.0f, 31.0f}, {12.0f, 22.0f, 32.0f}});
    check_close(run_op1("sub", {shaped<float>({1, 3}, {10.0f, 20.0f, 30.0f}), shaped<float>({2, 1}, {1.0f, 2.0f})}),
                F{{9.0f, 19.0f, 29.0f}, {8.0f, 18.0f, 28.0f}});
  }
  SUBCASE("scalar with tensor, both orders") {
    check_close(run_op1("mul", {F(2.0f), F{{1.0f, 2.0f}, {3.0f, 4.0f}}}), F{{2.0f, 4.0f}, {6.0f, 8.0f}});
    check_close(run_op1("sub", {F{1.0f, 2.0f}, F(1.0f)}), F{0.0f, 1.0f});
    check_close(run_op1("add", {F(1.0f), F(2.0f)}), F(3.0f));
  }
  SUBCASE("rank mismatch [3] with [2,3]") {
    check_equal(run_op1("add", {I{1, 2, 3}, I{{10, 20, 30}, {40, 50, 60}}}), I{{11, 22, 33}, {41, 52, 63}});
  }
  SUBCASE("[2,1,4] with [3,1] gives [2,3,4]") {
    const F a = shaped<float>({2, 1, 4}, {0.0f, 1.0f, 2.0f, 3.0f, 10.0f, 20.0f, 30.0f, 40.0f});
    const F b = shaped<float>({3, 1}, {100.0f, 200.0f, 300.0f});
    const F want = {{{100.0f, 101.0f, 102.0f, 103.0f}, {200.0f, 201.0f, 202.0f, 203.0f}, {300.0f, 301.0f, 302.0f, 303.0f}},
                    {{110.0f, 120.0f, 130.0f, 140.0f}, {210.0f, 220.0f, 230.0f, 240.0f}, {310.0f, 320.0f, 330.0f, 340.0f}}};
    check_close(run_op1("add", {a, b}), want);
  }
  SUBCASE("size-1 dim against size-1 dim stays 1") {
    check_close(run_op1("mul", {shaped<float>({1, 1}, {3.0f}), shaped<float>({1}, {2.0f})}), shaped<float>({1, 1}, {6.0f}));
  }
}

TEST_CASE("comparisons give bool and broadcast") {
  const F x = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
  const F y = {2.0f, 5.0f, 3.0f};
  check_equal(run_op1("equal", {x, y}), B{{false, false, true}, {false, true, false}});
  check_equal(run_op1("not_equal", {x, y}), B{{true, true, false}, {true, false, true}});
  check_equal(run_op1("less", {x, y}), B{{true, true, false}, {false, false, false}});
  check_equal(run_op1("less_equal", {x, y}), B{{true, true, true}, {false, true, false}});
  check_equal(run_op1("greater", {x, y}), B{{false, false, false}, {true, false, true}});
  check_equal(run_op1("greater_equal", {x, y}), B{{false, false, true}, {true, true, true}});
  check_equal(run_op1("less", {I{-1, 0, 1}, I(0)}), B{true, false, false});
  check_equal(run_op1("equal", {B{true, false}, shaped<bool>({2, 1}, {true, false})}), B{{true, false}, {false, true}});
  check_equal(run_op1("equal", {F{kNaN}, F{kNaN}}), B{false});
}

TEST_CASE("logical ops broadcast") {
  const B x = shaped<bool>({1, 2}, {true, false});
  const B y = shaped<bool>({2, 1}, {true, false});
  check_equal(run_op1("logical_and", {x, y}), B{{true, false}, {false, false}});
  check_equal(run_op1("logical_or", {x, y}), B{{true, true}, {true, false}});
}

TEST_CASE("select broadcasts all three operands") {
  const B cond = shaped<bool>({2, 1}, {true, false});
  const F a = {1.0f, 2.0f, 3.0f};
  const F b = F(-1.0f);
  check_close(run_op1("select", {cond, a, b}), F{{1.0f, 2.0f, 3.0f}, {-1.0f, -1.0f, -1.0f}});
  check_equal(run_op1("select", {B{true, false, true}, I{1, 2, 3}, shaped<int32_t>({2, 1}, {10, 20})}),
              I{{1, 10, 3}, {1, 20, 3}});
  check_equal(run_op1("select", {B(false), B{true, true}, B{false, true}}), B{false, true});
}

TEST_CASE("cast edge cases") {
  check_equal(run_op1("cast", {F{-1.7f, -0.5f, 0.5f, 2.9f, -3.0f}}, {{"dtype", DType::i32}}), I{-1, 0, 0, 2, -3});
  check_equal(run_op1("cast", {F{kNaN, 1e10f, -1e10f}}, {{"dtype", DType::i32}}),
              I{0, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()});
  check_equal(run_op1("cast", {F{0.0f, -0.0f, 0.1f, -2.0f, kNaN}}, {{"dtype", DType::boolean}}),
              B{false, false, true, true, true});
  check_equal(run_op1("cast", {I{0, 5, -1}}, {{"dtype", DType::boolean}}), B{false, true, true});
  check_close(run_op1("cast", {B{true, false}}, {{"dtype", DType::f32}}), F{1.0f, 0.0f});
  check_equal(run_op1("cast", {B{true, false}}, {{"dtype", DType::i32}}), I{1, 0});
  check_close(run_op1("cast", {shaped<int32_t>({1, 2}, {-3, 7})}, {{"dtype", DType::f32}}), shaped<float>({1, 2}, {-3.0f, 7.0f}));
  check_close(run_op1("cast", {F(2.5f)}, {{"dtype", DType::f32}}), F(2.5f));
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
