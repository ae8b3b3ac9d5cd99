// gather's gradient at exact values: each table row gets dy summed over its
// lookups. Finite-difference checks of gather and scatter_add, and grad of grad,
// are the op table's (tests/op_table/rows_gather.cpp).
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/op_test_util.h"
#include "ops/reduction.h"

using namespace kiln;
using kiln::test::random_tensor;
using I = Tensor::I32;

TEST_CASE("gather gradient values: each table row gets dy summed over its lookups") {
  Graph g;
  Builder b(g);
  const Value table = b.input("table", {DType::f32, {3, 2}});
  const Value ids = b.input("ids", {DType::i32, {4}});
  const Value w = b.input("w", {DType::f32, {4, 2}});
  const Value dt = grad(g, ops::sum(b, ops::mul(b, ops::gather(b, table, ids), w)), {table})[0];
  b.output(dt);
  Interpreter exe(g);
  exe.bind("table", random_tensor({3, 2}, 2));
  exe.bind("ids", Tensor(I{2, 0, 2, 2}));
  exe.bind("w", Tensor(Tensor::F32{{1, 2}, {3, 4}, {5, 6}, {7, 8}}));
  exe.run();
  // Row 0 from lookup 1; row 1 never looked up; row 2 from lookups 0, 2 and 3.
  test::check_equal(exe.output("table.grad"), Tensor::F32{{3, 4}, {0, 0}, {13, 16}});
}
