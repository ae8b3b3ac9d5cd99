#include <doctest/doctest.h>

#include "op_test_util.h"
#include "ops/reduction.h"

using namespace kiln;
using test::build_error;
using test::check_close;
using test::check_equal;
using test::run_op1;
using test::shaped;
using F = xt::xarray<float>;
using I = xt::xarray<int32_t>;
using Axes = std::vector<int64_t>;

namespace {
Attrs reduce_attrs(Axes axes, bool keepdims = false) { return {{"axes", std::move(axes)}, {"keepdims", keepdims}}; }
const F x23 = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
// [2,2,3] holding 0..11.
const F x223 = {{{0, 1, 2}, {3, 4, 5}}, {{6, 7, 8}, {9, 10, 11}}};
}  // namespace

TEST_CASE("sum over single and negative and multiple and all axes") {
  check_close(run_op1("sum", {x23}), F(21.0f));
  check_close(run_op1("sum", {x23}, reduce_attrs({0})), F{5.0f, 7.0f, 9.0f});
  check_close(run_op1("sum", {x23}, reduce_attrs({1})), F{6.0f, 15.0f});
  check_close(run_op1("sum", {x23}, reduce_attrs({-1})), F{6.0f, 15.0f});
  check_close(run_op1("sum", {x23}, reduce_attrs({0, 1})), F(21.0f));
  check_close(run_op1("sum", {x223}, reduce_attrs({0, 2})), F{24.0f, 42.0f});
  check_close(run_op1("sum", {x223}, reduce_attrs({-1, 0})), F{24.0f, 42.0f});
  check_close(run_op1("sum", {x223}, reduce_attrs({1})), F{{3.0f, 5.0f, 7.0f}, {15.0f, 17.0f, 19.0f}});
}

TEST_CASE("keepdims keeps reduced axes as size 1") {
  check_close(run_op1("sum", {x23}, reduce_attrs({1}, true)), shaped<float>({2, 1}, {6.0f, 15.0f}));
  check_close(run_op1("sum", {x23}, reduce_attrs({}, true)), shaped<float>({1, 1}, {21.0f}));
  check_close(run_op1("sum", {x223}, reduce_attrs({0, 2}, true)), shaped<float>({1, 2, 1}, {24.0f, 42.0f}));
  check_close(run_op1("max", {x223}, reduce_attrs({-2}, true)),
              shaped<float>({2, 1, 3}, {3.0f, 4.0f, 5.0f, 9.0f, 10.0f, 11.0f}));
}

TEST_CASE("scalars and size-1 and size-0 dims") {
  check_close(run_op1("sum", {F(2.5f)}), F(2.5f));
  check_close(run_op1("mean", {F(2.5f)}, reduce_attrs({}, true)), F(2.5f));
  check_close(run_op1("sum", {shaped<float>({1, 3}, {1.0f, 2.0f, 3.0f})}, reduce_attrs({0})), F{1.0f, 2.0f, 3.0f});
  check_close(run_op1("max", {shaped<float>({3, 1}, {1.0f, 7.0f, 3.0f})}, reduce_attrs({-1})), F{1.0f, 7.0f, 3.0f});
  check_close(run_op1("sum", {F::from_shape({0, 2})}, reduce_attrs({0})), F{0.0f, 0.0f});
  check_close(run_op1("max", {F::from_shape({0, 2})}, reduce_attrs({1})), F::from_shape({0}));
  // numpy: the mean of nothing is NaN.
  check_close(run_op1("mean", {F::from_shape({0, 2})}, reduce_attrs({0})), F{NAN, NAN});
}

TEST_CASE("mean") {
  check_close(run_op1("mean", {x23}), F(3.5f));
  check_close(run_op1("mean", {x23}, reduce_attrs({0})), F{2.5f, 3.5f, 4.5f});
  check_close(run_op1("mean", {x23}, reduce_attrs({-1}, true)), shaped<float>({2, 1}, {2.0f, 5.0f}));
  check_close(run_op1("mean", {x223}, reduce_attrs({0, 2})), F{4.0f, 7.0f});
}

TEST_CASE("max") {
  const F x = {{1.0f, -2.0f, 8.0f}, {-4.0f, 5.0f, -6.0f}};
  check_close(run_op1("max", {x}), F(8.0f));
  check_close(run_op1("max", {x}, reduce_attrs({0})), F{1.0f, 5.0f, 8.0f});
  check_close(run_op1("max", {x}, reduce_attrs({1})), F{8.0f, 5.0f});
}

TEST_CASE("i32 reductions") {
  const I x = {{1, -2}, {3, 4}};
  check_equal(run_op1("sum", {x}), I(6));
  check_equal(run_op1("sum", {x}, reduce_attrs({1})), I{-1, 7});
  check_equal(run_op1("sum", {x}, reduce_attrs({0}, true)), shaped<int32_t>({1, 2}, {4, 2}));
  check_equal(run_op1("max", {I{{-1, -5}, {-3, -2}}}, reduce_attrs({0})), I{-1, -2});
  check_equal(run_op1("max", {I{{-1, -5}, {-3, -2}}}), I(-1));
}

TEST_CASE("reduction inference errors") {
  const TensorType f23{DType::f32, {2, 3}};
  CHECK(build_error("sum", {f23}, reduce_attrs({2})) == "sum(f32[2,3]): axis 2 is out of range for rank 2");
  CHECK(build_error("max", {f23}, reduce_attrs({-3})) == "max(f32[2,3]): axis -3 is out of range for rank 2");
  CHECK(build_error("sum", {f23}, reduce_attrs({1, -1})) == "sum(f32[2,3]): duplicate axis -1 in [1,-1] for rank 2");
  CHECK(build_error("mean", {{DType::i32, {2}}}) == "mean(i32[2]): operand 0 must be f32, got i32");
  CHECK(build_error("sum", {{DType::boolean, {2}}}) == "sum(bool[2]): operand 0 must be f32 or i32, got bool");
  CHECK(build_error("max", {{DType::f32, {0, 3}}}, reduce_attrs({0})) ==
        "max(f32[0,3]): cannot reduce axis 0 of size 0 (no identity)");
  CHECK(build_error("sum", {f23}, {{"axis", int64_t{0}}}) == "sum(f32[2,3]): unknown attribute 'axis' for op 'sum'");
  CHECK(build_error("sum", {f23}, {{"axes", int64_t{0}}}) ==
        "sum(f32[2,3]): attribute 'axes' of op 'sum' must be int list, got int");
}

TEST_CASE("reduction builder helpers") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 3, 4}});
  CHECK(g.type(ops::sum(b, x)) == TensorType{DType::f32, {}});
  CHECK(g.type(ops::mean(b, x, {-1}, true)) == TensorType{DType::f32, {2, 3, 1}});
  const Value m = ops::max(b, x, {0, 2});
  CHECK(g.type(m) == TensorType{DType::f32, {3}});
  CHECK(g.producer(m).attrs.get_ints("axes") == Axes{0, 2});
  CHECK_FALSE(g.producer(m).attrs.get_bool("keepdims"));
}
