#include <doctest/doctest.h>

#include <limits>

#include "op_test_util.h"
#include "ops/normalization.h"

using namespace kiln;
using test::kInf;
using test::build_error;
using test::check_close;
using test::run_op1;
using test::shaped;
using F = xt::xarray<float>;

namespace {
Attrs axis_attr(int64_t axis) { return {{"axis", axis}}; }
// layer_norm's first result, y.
Tensor layer_norm_y(const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  return test::run_op("layer_norm", inputs, attrs)[0];
}
}  // namespace

TEST_CASE("softmax") {
  // e^1, e^2, e^3 = 2.7182818, 7.3890561, 20.0855369; sum 30.1928748.
  check_close(run_op1("softmax", {F{1.0f, 2.0f, 3.0f}}), F{0.09003057f, 0.24472847f, 0.66524096f});
  // Columns [1,2] and [1,0]; 1/(1+e) = 0.26894142.
  check_close(run_op1("softmax", {F{{1.0f, 1.0f}, {2.0f, 0.0f}}}, axis_attr(0)),
              F{{0.26894142f, 0.73105858f}, {0.73105858f, 0.26894142f}});
  check_close(run_op1("softmax", {shaped<float>({2, 1}, {5.0f, -3.0f})}), shaped<float>({2, 1}, {1.0f, 1.0f}));
}

TEST_CASE("softmax of large values stays finite") {
  check_close(run_op1("softmax", {F{1000.0f, 1001.0f}}), F{0.26894142f, 0.73105858f});
  check_close(run_op1("softmax", {F{{-1000.0f, -1001.0f}}}), F{{0.73105858f, 0.26894142f}});
}

TEST_CASE("softmax and log_softmax of masked (-inf) entries") {
  check_close(run_op1("softmax", {F{0.0f, -kInf, 0.0f}}), F{0.5f, 0.0f, 0.5f});
  // ln 2 = 0.69314718.
  check_close(run_op1("log_softmax", {F{{0.0f, -kInf, 0.0f}, {1.0f, 1.0f, -kInf}}}),
              F{{-0.69314718f, -kInf, -0.69314718f}, {-0.69314718f, -0.69314718f, -kInf}});
}

TEST_CASE("log_softmax") {
  // log(30.1928748) = 3.40760596.
  check_close(run_op1("log_softmax", {F{1.0f, 2.0f, 3.0f}}), F{-2.40760596f, -1.40760596f, -0.40760596f});
  // log(1 + e) = 1.31326169.
  check_close(run_op1("log_softmax", {F{1000.0f, 1001.0f}}), F{-1.31326169f, -0.31326169f});
  check_close(run_op1("log_softmax", {F{{1.0f, 1.0f}, {2.0f, 0.0f}}}, axis_attr(-2)),
              F{{-1.31326169f, -0.31326169f}, {-0.31326169f, -1.31326169f}});
}

TEST_CASE("layer_norm over the last axis") {
  // Row [1,2,3]: mean 2, var 2/3 -> [-1.2247449, 0, 1.2247449].
  // Row [0,0,3]: mean 1, var 2 -> [-0.7071068, -0.7071068, 1.4142136].
  const F x = {{1.0f, 2.0f, 3.0f}, {0.0f, 0.0f, 3.0f}};
  const F gamma = {1.0f, 2.0f, 0.5f};
  const F beta = {0.0f, 1.0f, -1.0f};
  check_close(layer_norm_y({x, gamma, beta}, {{"eps", 0.0}}),
              F{{-1.22474487f, 1.0f, -0.38762756f}, {-0.70710678f, -0.41421356f, -0.29289322f}});
  check_close(layer_norm_y({F{1.0f, 2.0f, 3.0f}, F{1.0f, 1.0f, 1.0f}, F{0.0f, 0.0f, 0.0f}}, {{"eps", 0.0}}),
              F{-1.22474487f, 0.0f, 1.22474487f});
}

TEST_CASE("layer_norm returns each row's mean and rstd") {
  // Rows [1,2,3] and [0,0,3] as above: rstd = 1 / sqrt(2/3) and 1 / sqrt(2).
  const std::vector<Tensor> r =
      test::run_op("layer_norm", {F{{1.0f, 2.0f, 3.0f}, {0.0f, 0.0f, 3.0f}}, F{1.0f, 1.0f, 1.0f}, F{0.0f, 0.0f, 0.0f}},
                   {{"eps", 0.0}});
  REQUIRE(r.size() == 3);
  check_close(r[1], F{2.0f, 1.0f});
  check_close(r[2], F{1.22474487f, 0.70710678f});
  // A vector's statistics are scalars; eps is added to the variance.
  const std::vector<Tensor> v =
      test::run_op("layer_norm", {F{1.0f, -1.0f}, F{1.0f, 1.0f}, F{0.0f, 0.0f}}, {{"eps", 3.0}});
  check_close(v[1], F(0.0f));
  check_close(v[2], F(0.5f));
}

TEST_CASE("layer_norm eps and constant rows") {
  // [1,-1]: mean 0, var 1; with eps 3 divides by sqrt(4).
  check_close(layer_norm_y({shaped<float>({1, 1, 2}, {1.0f, -1.0f}), F{1.0f, 1.0f}, F{0.0f, 0.0f}}, {{"eps", 3.0}}),
              shaped<float>({1, 1, 2}, {0.5f, -0.5f}));
  // A constant row normalizes to 0, so the result is beta (the default eps avoids 0/0).
  check_close(layer_norm_y({F{{5.0f, 5.0f}}, F{2.0f, 2.0f}, F{0.25f, -1.0f}}), F{{0.25f, -1.0f}});
}

TEST_CASE("normalization inference errors") {
  CHECK(build_error("softmax", {{DType::i32, {2}}}) == "softmax(i32[2]): operand 0 must be f32, got i32");
  CHECK(build_error("softmax", {{DType::f32, {}}}) == "softmax(f32[]): axis -1 is out of range for rank 0");
  CHECK(build_error("log_softmax", {{DType::f32, {2, 3}}}, axis_attr(2)) ==
        "log_softmax(f32[2,3]): axis 2 is out of range for rank 2");
  CHECK(build_error("layer_norm", {{DType::f32, {2, 3}}, {DType::f32, {4}}, {DType::f32, {3}}}) ==
        "layer_norm(f32[2,3], f32[4], f32[3]): gamma (operand 1) must be f32[3] (x's last dim), got f32[4]");
  CHECK(build_error("layer_norm", {{DType::f32, {2, 3}}, {DType::f32, {3}}, {DType::i32, {3}}}) ==
        "layer_norm(f32[2,3], f32[3], i32[3]): beta (operand 2) must be f32[3] (x's last dim), got i32[3]");
  CHECK(build_error("layer_norm", {{DType::f32, {}}, {DType::f32, {1}}, {DType::f32, {1}}}) ==
        "layer_norm(f32[], f32[1], f32[1]): x (operand 0) must have at least rank 1, got rank 0");
  CHECK(build_error("layer_norm", {{DType::f32, {2}}, {DType::f32, {2}}}) ==
        "layer_norm(f32[2], f32[2]): expects 3 operand(s), got 2");
  CHECK(build_error("softmax", {{DType::f32, {2}}}, {{"axis", 0.5}}) ==
        "softmax(f32[2]): attribute 'axis' of op 'softmax' must be int, got float");
}

TEST_CASE("normalization builder helpers") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 4}});
  const Value gamma = b.param("gamma", {DType::f32, {4}});
  const Value beta = b.param("beta", {DType::f32, {4}});
  const Value s = ops::softmax(b, x, 0);
  CHECK(g.type(s) == TensorType{DType::f32, {2, 4}});
  CHECK(g.producer(s).attrs.get_int("axis") == 0);
  CHECK(g.producer(ops::log_softmax(b, x)).attrs.get_int("axis") == -1);
  const Value y = ops::layer_norm(b, x, gamma, beta);
  CHECK(g.type(y) == TensorType{DType::f32, {2, 4}});
  CHECK(g.producer(y).attrs.get_float("eps") == 1e-5);
  CHECK(g.producer(y).results.size() == 3);
  CHECK(g.producer(y).results[0] == y);
  CHECK(g.type(g.producer(y).results[2]) == TensorType{DType::f32, {2}});
}

TEST_CASE("normalizations of zero-size tensors give zero-size results") {
  check_close(run_op1("softmax", {F::from_shape({2, 0})}), F::from_shape({2, 0}));
  check_close(run_op1("log_softmax", {F::from_shape({0, 3})}), F::from_shape({0, 3}));
  check_close(layer_norm_y({F::from_shape({0, 3}), F{1.0f, 1.0f, 1.0f}, F{0.0f, 0.0f, 0.0f}}), F::from_shape({0, 3}));
}
