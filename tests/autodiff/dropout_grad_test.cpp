// dropout's gradient at exact values: dy through the forward's own mask and
// scale. Finite-difference checks are the op table's (tests/op_table/rows_dropout.cpp).
#include <doctest/doctest.h>

#include <xtensor/xbuilder.hpp>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "ops/dropout.h"
#include "ops/op_test_util.h"
#include "ops/reduction.h"

using namespace kiln;

TEST_CASE("dropout gradient values: the forward's mask scaled by 1 / (1 - rate)") {
  // With x = 1 everywhere the forward output is the scaled mask itself, and so is
  // the gradient of sum(dropout(x)).
  const double rate = 0.3;
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {200}});
  const Value key = b.input("key", {DType::i32, {}});
  const Value y = ops::dropout(b, x, key, rate, 5);
  b.output(y);
  b.output(grad(g, ops::sum(b, y), {x})[0]);
  Interpreter exe(g);
  exe.bind("x", Tensor(Tensor::F32(xt::ones<float>({200}))));
  exe.bind("key", Tensor(Tensor::I32(9)));
  exe.run();
  const Tensor::F32 mask = exe.output(g.name_of(y)).f32();
  test::check_equal(exe.output("x.grad"), mask);
  size_t kept = 0;
  for (float m : mask) {
    CHECK((m == 0.0f || m == doctest::Approx(1.0 / (1.0 - rate))));
    kept += m != 0.0f;
  }
  CHECK(kept > 100);  // about 140 of 200 kept: the mask is neither all-zero nor all-one
  CHECK(kept < 180);
}
