// Gradient rules of the reductions at exact values, max's ties included.
// Finite-difference checks over axes and keepdims, and grad of grad, are the op
// table's (tests/op_table/rows_reduction.cpp).
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"

using namespace kiln;
using F = xt::xarray<float>;

namespace {

using Reduce = Value (*)(Builder&, Value, std::vector<int64_t>, bool);

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
