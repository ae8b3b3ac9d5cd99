#include <doctest/doctest.h>

#include <limits>

#include "op_test_util.h"
#include "ops/constant.h"

using namespace kiln;
using test::build_error;
using test::check_close;
using test::check_equal;
using test::kInf;
using test::run_op1;
using test::shaped;
using F = xt::xarray<float>;
using I = xt::xarray<int32_t>;
using B = xt::xarray<bool>;


TEST_CASE("fill makes its value in the dtype") {
  check_close(run_op1("fill", {}, {{"shape", Shape{2, 3}}, {"value", 1.5}}),
              F{{1.5f, 1.5f, 1.5f}, {1.5f, 1.5f, 1.5f}});
  check_close(run_op1("fill", {}, {{"shape", Shape{2}}}), F{0.0f, 0.0f});
  check_close(run_op1("fill", {}, {{"shape", Shape{}}, {"value", -kInf}}), F(-kInf));
  check_equal(run_op1("fill", {}, {{"shape", Shape{3}}, {"value", -2.0}, {"dtype", DType::i32}}), I{-2, -2, -2});
  check_equal(run_op1("fill", {}, {{"shape", Shape{2}}, {"value", int64_t{7}}, {"dtype", DType::i32}}), I{7, 7});
  check_equal(run_op1("fill", {}, {{"shape", Shape{1, 2}}, {"value", 1.0}, {"dtype", DType::boolean}}),
              shaped<bool>({1, 2}, {true, true}));
  check_equal(run_op1("fill", {}, {{"shape", Shape{2, 0}}, {"value", 3.0}, {"dtype", DType::i32}}),
              xt::xarray<int32_t>::from_shape({2, 0}));
}

TEST_CASE("iota counts along its axis") {
  check_equal(run_op1("iota", {}, {{"shape", Shape{4}}}), I{0, 1, 2, 3});
  check_equal(run_op1("iota", {}, {{"shape", Shape{2, 3}}}), I{{0, 0, 0}, {1, 1, 1}});
  check_equal(run_op1("iota", {}, {{"shape", Shape{2, 3}}, {"axis", int64_t{1}}}), I{{0, 1, 2}, {0, 1, 2}});
  check_close(run_op1("iota", {}, {{"shape", Shape{2, 1, 2}}, {"axis", int64_t{-1}}, {"dtype", DType::f32}}),
              shaped<float>({2, 1, 2}, {0.0f, 1.0f, 0.0f, 1.0f}));
}

TEST_CASE("causal_mask is 0 on and below the diagonal and -inf above") {
  check_close(run_op1("causal_mask", {}, {{"size", int64_t{3}}}),
              F{{0.0f, -kInf, -kInf}, {0.0f, 0.0f, -kInf}, {0.0f, 0.0f, 0.0f}});
  check_close(run_op1("causal_mask", {}, {{"size", int64_t{1}}}), shaped<float>({1, 1}, {0.0f}));
}

TEST_CASE("constant inference errors") {
  CHECK(build_error("fill", {}) == "fill(): op 'fill' requires attribute 'shape' (int list)");
  CHECK(build_error("fill", {}, {{"shape", Shape{2, -1}}}) == "fill(): shape must not have negative dims, got [2,-1]");
  CHECK(build_error("fill", {}, {{"shape", Shape{2}}, {"size", int64_t{2}}}) ==
        "fill(): unknown attribute 'size' for op 'fill'");
  CHECK(build_error("fill", {{DType::f32, {2}}}, {{"shape", Shape{2}}}) ==
        "fill(f32[2]): expects 0 operand(s), got 1");
  // A value its dtype cannot hold was truncated or read as true (tests/ir/value_checks_test.cpp has more).
  CHECK(build_error("fill", {}, {{"shape", Shape{3}}, {"value", -2.7}, {"dtype", DType::i32}}) ==
        "fill(): value -2.7 does not fit i32 (an integer from -2147483648 to 2147483647)");
  CHECK(build_error("fill", {}, {{"shape", Shape{1}}, {"value", 0.5}, {"dtype", DType::boolean}}) ==
        "fill(): value 0.5 does not fit bool (0 or 1)");
  // bf16 holds what rounds to a finite bf16: not 3.4e38 (past halfway to 2^128), nor what f32 cannot hold.
  for (double v : {3.4e38, -1e300})
    CHECK(build_error("fill", {}, {{"shape", Shape{1}}, {"value", v}, {"dtype", DType::bf16}})
              .find("does not fit bf16") != std::string::npos);
  CHECK(test::result_types("fill", {}, {{"shape", Shape{1}}, {"value", 3.38e38}, {"dtype", DType::bf16}}) ==
        std::vector<TensorType>{{DType::bf16, {1}}});
  CHECK(build_error("iota", {}, {{"shape", Shape{2, 3}}, {"axis", int64_t{2}}}) ==
        "iota(): axis 2 is out of range for rank 2");
  CHECK(build_error("iota", {}, {{"shape", Shape{2}}, {"dtype", DType::boolean}}) ==
        "iota(): dtype must be f32 or i32, got bool");
  CHECK(build_error("causal_mask", {}, {{"size", int64_t{-3}}}) ==
        "causal_mask(): size must not be negative, got -3");
  CHECK(build_error("causal_mask", {}, {{"size", 2.0}}) ==
        "causal_mask(): attribute 'size' of op 'causal_mask' must be int, got float");
}

TEST_CASE("constant builder helpers") {
  Graph g;
  Builder b(g);
  const Value f = ops::fill(b, {2}, 3.0, DType::i32);
  const Value i = ops::iota(b, {2, 2}, 1, DType::f32);
  const Value m = ops::causal_mask(b, 4);
  CHECK(g.type(f) == TensorType{DType::i32, {2}});
  CHECK(g.type(i) == TensorType{DType::f32, {2, 2}});
  CHECK(g.type(m) == TensorType{DType::f32, {4, 4}});
  CHECK(std::get<double>(*g.producer(f).attrs.find("value")) == 3.0);
  CHECK(g.producer(i).attrs.get_int("axis") == 1);
}
