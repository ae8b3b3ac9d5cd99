// Gradient rules of softmax, log_softmax and layer_norm in composites (masked
// inputs, a residual layer_norm) and at exact values. Finite-difference checks
// over shapes and axes, of every layer_norm result, and grad of grad are the op
// table's (tests/op_table/rows_normalization.cpp).
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/normalization.h"
#include "ops/reduction.h"

using namespace kiln;
using test::check_gradients;
using test::GradCheckOptions;
using test::random_tensor;
using F = xt::xarray<float>;

namespace {

// A [4,4] additive mask, -1e9 above the diagonal (finite, so finite differences
// stay finite), and the matching bool "kept" pattern. Every row and every column
// keeps at least one entry, so it works along either axis.
Tensor additive_mask() {
  F m = F::from_shape({4, 4});
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 4; ++j) m(i, j) = j > i ? -1e9f : 0.0f;
  return Tensor(std::move(m));
}
Tensor kept_mask() { return Tensor(xt::xarray<bool>(xt::equal(additive_mask().f32(), 0.0f))); }

Tensor layer_norm_x(const Shape& s, uint64_t seed) { return random_tensor(s, seed, -2.0f, 2.0f); }
Tensor layer_norm_gamma(int64_t d, uint64_t seed) { return random_tensor({d}, seed, 0.5f, 1.5f); }

}  // namespace

TEST_CASE("softmax gradient with masked entries") {
  // softmax(x + mask): masked entries are 0 and get no gradient.
  GradCheckOptions opts;
  opts.constant = {1};
  for (int64_t axis : {-1, 0}) {
    INFO("axis ", axis);
    check_gradients(
        [axis](Builder& b, const std::vector<Value>& in) { return ops::softmax(b, ops::add(b, in[0], in[1]), axis); },
        {random_tensor({4, 4}, 11, -2.0f, 2.0f), additive_mask()}, opts);
  }
}

TEST_CASE("log_softmax gradient with masked entries") {
  // The masked entries of log_softmax(x + mask) are about -1e9, so the loss keeps
  // only the others (as a cross-entropy would); the masked inputs get 0.
  GradCheckOptions opts;
  opts.constant = {1};
  for (int64_t axis : {-1, 0}) {
    INFO("axis ", axis);
    check_gradients(
        [axis](Builder& b, const std::vector<Value>& in) {
          const Value y = ops::log_softmax(b, ops::add(b, in[0], in[1]), axis);
          return ops::select(b, in[2], y, ops::fill(b, {}, 0.0));
        },
        {random_tensor({4, 4}, 12, -2.0f, 2.0f), additive_mask(), kept_mask()}, opts);
  }
}

TEST_CASE("softmax gradient at exact values") {
  // softmax([0, ln 3]) = [1/4, 3/4]; with dy = [1, 0] the general rule gives
  // y * (dy - y . dy) = [1/4 * 3/4, 3/4 * -1/4].
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2}});
  const Value dy = b.input("dy", {DType::f32, {2}});
  const Value dx = grad(g, ops::sum(b, ops::mul(b, ops::softmax(b, x), dy)), {x})[0];
  b.output(dx);
  Interpreter exe(g);
  exe.bind("x", Tensor(F{0.0f, std::log(3.0f)}));
  exe.bind("dy", Tensor(F{1.0f, 0.0f}));
  exe.run();
  const F got = exe.output(g.name_of(dx)).f32();
  CHECK(got(0) == doctest::Approx(3.0 / 16));
  CHECK(got(1) == doctest::Approx(-3.0 / 16));
}

TEST_CASE("layer_norm of a residual") {
  // layer_norm(x + tanh(x * w)): x reaches the output along two paths.
  check_gradients(
      [](Builder& b, const std::vector<Value>& in) {
        const Value residual = ops::add(b, in[0], ops::tanh(b, ops::mul(b, in[0], in[1])));
        return ops::layer_norm(b, residual, in[2], in[3]);
      },
      {layer_norm_x({3, 4}, 21), random_tensor({4}, 22), layer_norm_gamma(4, 23), random_tensor({4}, 24)});
}

TEST_CASE("layer_norm over one element has zero x and gamma gradients") {
  // x - mean is 0, so the output is beta whatever x and gamma are.
  Graph g;
  Builder b(g);
  const TensorType t{DType::f32, {3, 1}};
  const Value x = b.input("x", t);
  const Value gamma = b.input("gamma", {DType::f32, {1}});
  const Value beta = b.input("beta", {DType::f32, {1}});
  const std::vector<Value> d = grad(g, ops::sum(b, ops::layer_norm(b, x, gamma, beta)), {x, gamma, beta});
  for (Value v : d) b.output(v);
  Interpreter exe(g);
  F x_values{1.0f, -2.0f, 0.5f};
  x_values.reshape({3, 1});
  exe.bind("x", Tensor(std::move(x_values)));
  exe.bind("gamma", Tensor(F{2.0f}));
  exe.bind("beta", Tensor(F{0.5f}));
  exe.run();
  CHECK(exe.output(g.name_of(d[0])).f32() == xt::zeros<float>({3, 1}));
  CHECK(exe.output(g.name_of(d[1])).f32() == F{0.0f});
  CHECK(exe.output(g.name_of(d[2])).f32() == F{3.0f});
}
