// Gradient rules of the reductions: finite-difference checks over axes and
// keepdims, exact values for max's ties, and grad of grad.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"

using namespace kiln;
using test::check_gradients;
using test::random_tensor;
using F = xt::xarray<float>;

namespace {

using Reduce = Value (*)(Builder&, Value, std::vector<int64_t>, bool);

struct Case {
  Shape shape;
  std::vector<int64_t> axes;
};

// Every kind of axes list: all (empty), one axis from either end, several,
// every axis named, a size-1 axis, a scalar.
const std::vector<Case> kCases = {{{2, 3, 4}, {}},   {{2, 3, 4}, {0}},    {{2, 3, 4}, {1}},
                                  {{2, 3, 4}, {-1}}, {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {0, 1, 2}},
                                  {{2, 1, 3}, {1}},  {{5}, {0}},          {{}, {}}};

std::string axes_str(const std::vector<int64_t>& axes) {
  std::string s = "[";
  for (int64_t a : axes) {
    if (s.size() > 1) s += ",";
    s += std::to_string(a);
  }
  return s + "]";
}

// Distinct values 0.1 apart in a random order (and shifted by `seed`): no ties
// or near-ties for max at the finite-difference step.
Tensor distinct_values(const Shape& s, uint64_t seed) {
  F a = F::from_shape(xt_shape(s));
  std::vector<float> v(a.size());
  std::iota(v.begin(), v.end(), 0.0f);
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  std::transform(v.begin(), v.end(), a.begin(), [](float k) { return 0.1f * k - 1.0f; });
  return Tensor(std::move(a));
}

void check_reduction(Reduce op, Tensor (*make)(const Shape&, uint64_t)) {
  uint64_t seed = 1;
  for (const Case& c : kCases)
    for (bool keepdims : {false, true}) {
      INFO("shape ", shape_str(c.shape), " axes ", axes_str(c.axes), " keepdims ", keepdims);
      check_gradients([&](Builder& b, const std::vector<Value>& in) { return op(b, in[0], c.axes, keepdims); },
                      {make(c.shape, seed++)});
    }
}

Tensor uniform(const Shape& s, uint64_t seed) { return random_tensor(s, seed); }

// The values as a column [n,1].
Tensor column(F values) {
  values.reshape({values.size(), 1});
  return Tensor(std::move(values));
}

// d/dx sum(reduce(x, axes, keepdims) * w) computed by the interpreter.
F gradient_of_weighted(Reduce op, const Tensor& x, std::vector<int64_t> axes, bool keepdims, const Tensor& w) {
  Graph g;
  Builder b(g);
  const Value xv = b.input("x", x.type());
  const Value wv = b.input("w", w.type());
  const Value loss = ops::sum(b, ops::mul(b, op(b, xv, std::move(axes), keepdims), wv));
  const Value dx = grad(g, loss, {xv})[0];
  b.output(dx);
  Interpreter exe(g);
  exe.bind("x", x);
  exe.bind("w", w);
  exe.run();
  return exe.output(g.name_of(dx)).f32();
}

}  // namespace

TEST_CASE("sum gradient over axes and keepdims") { check_reduction(ops::sum, uniform); }

TEST_CASE("mean gradient over axes and keepdims") { check_reduction(ops::mean, uniform); }

TEST_CASE("max gradient over axes and keepdims without ties") { check_reduction(ops::max, distinct_values); }

TEST_CASE("sum and mean gradients at exact values") {
  const Tensor x(F{{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}});
  const Tensor w(F{2.0f, 3.0f});  // one weight per row
  CHECK(gradient_of_weighted(ops::sum, x, {1}, false, w) == F{{2.0f, 2.0f, 2.0f}, {3.0f, 3.0f, 3.0f}});
  CHECK(gradient_of_weighted(ops::mean, x, {1}, false, w) == F{{2.0f / 3, 2.0f / 3, 2.0f / 3}, {1.0f, 1.0f, 1.0f}});
  CHECK(gradient_of_weighted(ops::sum, x, {-1}, true, column(F{2.0f, 3.0f})) ==
        F{{2.0f, 2.0f, 2.0f}, {3.0f, 3.0f, 3.0f}});
}

TEST_CASE("max divides the gradient equally among tied maxima") {
  const Tensor x(F{{1.0f, 3.0f, 3.0f}, {2.0f, 2.0f, 2.0f}});
  SUBCASE("along an axis") {
    const F want{{0.0f, 1.0f, 1.0f}, {1.0f, 1.0f, 1.0f}};  // row weights 2 and 3 shared by 2 and 3 ties
    CHECK(gradient_of_weighted(ops::max, x, {1}, false, Tensor(F{2.0f, 3.0f})) == want);
    CHECK(gradient_of_weighted(ops::max, x, {1}, true, column(F{2.0f, 3.0f})) == want);
  }
  SUBCASE("over all axes") {
    CHECK(gradient_of_weighted(ops::max, x, {}, false, Tensor::scalar(1.0f)) ==
          F{{0.0f, 0.5f, 0.5f}, {0.0f, 0.0f, 0.0f}});
  }
  SUBCASE("along the other axis") {
    // Column maxima: 2 (row 1), 3 (row 0), 3 (row 0).
    CHECK(gradient_of_weighted(ops::max, x, {0}, false, Tensor(F{1.0f, 1.0f, 1.0f})) ==
          F{{0.0f, 1.0f, 1.0f}, {1.0f, 0.0f, 0.0f}});
  }
}

TEST_CASE("grad of grad through reductions by finite differences") {
  // f(x) = d/dx sum(r * r) with r a reduction of x: 2r spread back over x, so its
  // gradient goes through the reduction's rule and the reshape/broadcast it emits.
  const auto squared = [](Reduce op, std::vector<int64_t> axes, bool keepdims) {
    return [=](Builder& b, const std::vector<Value>& in) {
      const Value r = op(b, in[0], axes, keepdims);
      return grad(b.graph(), ops::sum(b, ops::mul(b, r, r)), {in[0]})[0];
    };
  };
  SUBCASE("sum") { check_gradients(squared(ops::sum, {1}, false), {random_tensor({2, 3}, 1)}); }
  SUBCASE("mean") { check_gradients(squared(ops::mean, {0}, true), {random_tensor({2, 3}, 2)}); }
  SUBCASE("max") { check_gradients(squared(ops::max, {-1}, false), {distinct_values({2, 3}, 3)}); }
}
