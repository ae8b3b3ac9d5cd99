// Gradient rules of gather (scatter_add into a zero table) and scatter_add (gather).
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/op_test_util.h"
#include "ops/reduction.h"

using namespace kiln;
using kiln::test::check_gradients;
using kiln::test::random_tensor;
using Inputs = std::vector<Value>;
using I = Tensor::I32;

namespace {

void check_gather(const Shape& table, const I& indices, int64_t axis) {
  INFO("gather from ", shape_str(table), " along axis ", axis, " at ", test::array_str(indices));
  check_gradients([&](Builder& b, const Inputs& x) { return ops::gather(b, x[0], x[1], axis); },
                  {random_tensor(table, 1), indices});
}

}  // namespace

TEST_CASE("gather gradient along axis 0 with repeated indices") {
  check_gather({4, 3}, I{0, 2, 2, 3, 0}, 0);
  check_gather({4, 3}, I{{1, 1}, {3, 0}}, 0);  // rank-2 indices
  check_gather({4, 3}, I(2), 0);               // a scalar index
  check_gather({5}, I{4, 4, 4, 1}, 0);
}

TEST_CASE("gather gradient along inner axes") {
  check_gather({2, 5, 3}, I{4, 1, 4}, 1);
  check_gather({2, 5, 3}, I{{0, 2}, {2, 2}}, 1);
  check_gather({3, 4}, I{3, 0, 3}, -1);
  check_gather({2, 3, 4}, I{1, 1, 0}, 2);
}

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

TEST_CASE("scatter_add gradient is gather of dy") {
  const auto check = [](const Shape& updates, const I& indices, int64_t size, int64_t axis) {
    INFO("scatter_add of ", shape_str(updates), " along axis ", axis, " at ", test::array_str(indices));
    check_gradients([&](Builder& b, const Inputs& x) { return ops::scatter_add(b, x[0], x[1], size, axis); },
                    {random_tensor(updates, 3), indices});
  };
  check({4, 2}, I{1, 0, 1, 3}, 4, 0);
  check({2, 3}, I{2, 2, 0}, 5, 1);
  check({2, 2, 3}, I{{0, 1}, {1, 1}}, 2, 0);
  check({3}, I(1), 2, 0);
}

TEST_CASE("gather gradient of gradient goes through scatter_add") {
  // d table of sum(gather(table) * w) is scatter_add(w); its gradient with respect
  // to w runs scatter_add's rule (gather). Squared, so the outer loss is nonlinear.
  const auto check = [](const Shape& table, const I& indices, const Shape& w, int64_t axis) {
    INFO("grad of grad of gather from ", shape_str(table), " along axis ", axis);
    check_gradients(
        [&](Builder& b, const Inputs& x) {
          const Value loss = ops::sum(b, ops::mul(b, ops::gather(b, x[0], x[1], axis), x[2]));
          const Value dtable = grad(b.graph(), loss, {x[0]})[0];
          return ops::mul(b, dtable, dtable);
        },
        {random_tensor(table, 40), indices, random_tensor(w, 41)});
  };
  check({4, 3}, I{0, 2, 2}, {3, 3}, 0);
  check({2, 4}, I{{3, 3}, {1, 0}}, {2, 2, 2}, 1);
}
