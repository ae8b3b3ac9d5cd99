// Gradient rules of broadcast and slice at exact values. Finite-difference
// checks of every shape op, and grad of grad, are the op table's
// (tests/op_table/rows_shape.cpp).
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/elementwise.h"
#include "ops/op_test_util.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

using namespace kiln;
using kiln::test::random_tensor;

TEST_CASE("broadcast gradient values: each element counts its copies") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 1}});
  const Value dx = grad(g, ops::sum(b, ops::broadcast(b, x, {3, 2, 4})), {x})[0];
  b.output(dx);
  Interpreter exe(g);
  exe.bind("x", Tensor(test::shaped<float>({2, 1}, {1.0f, 2.0f})));
  exe.run();
  test::check_equal(exe.output("x.grad"), test::shaped<float>({2, 1}, {12.0f, 12.0f}));
}

TEST_CASE("slice gradient values: ones in the slice and zeros around it") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {3, 4}});
  const Value dx = grad(g, ops::sum(b, ops::slice(b, x, {0, 1}, {1, -3}, {3, 3})), {x})[0];
  b.output(dx);
  Interpreter exe(g);
  exe.bind("x", random_tensor({3, 4}, 5));
  exe.run();
  test::check_equal(exe.output("x.grad"), Tensor::F32{{0, 0, 0, 0}, {0, 1, 1, 0}, {0, 1, 1, 0}});
}
