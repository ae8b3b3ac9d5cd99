// matmul's gradient at exact values. Finite-difference checks over transpose
// flags and batch dims, and grad of grad, are the op table's
// (tests/op_table/rows_matmul.cpp).
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/op_test_util.h"
#include "ops/reduction.h"

using namespace kiln;

TEST_CASE("matmul gradient values: d/dA sum(A B) = row sums of B and d/dB = column sums of A") {
  Graph g;
  Builder b(g);
  const Value lhs = b.input("a", {DType::f32, {2, 2}});
  const Value rhs = b.input("b", {DType::f32, {2, 3}});
  const std::vector<Value> d = grad(g, ops::sum(b, ops::matmul(b, lhs, rhs)), {lhs, rhs});
  for (Value v : d) b.output(v);
  Interpreter exe(g);
  exe.bind("a", Tensor(Tensor::F32{{1, 2}, {3, 4}}));
  exe.bind("b", Tensor(Tensor::F32{{1, 2, 3}, {4, 5, 6}}));
  exe.run();
  test::check_equal(exe.output("a.grad"), Tensor::F32{{6, 15}, {6, 15}});
  test::check_equal(exe.output("b.grad"), Tensor::F32{{4, 4, 4}, {6, 6, 6}});
}
