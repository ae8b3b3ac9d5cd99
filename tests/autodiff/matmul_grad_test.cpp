// Gradient rule of matmul: all transpose flags, batch dims and their broadcasting.
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/op_test_util.h"
#include "ops/reduction.h"

using namespace kiln;
using kiln::test::check_gradients;
using kiln::test::random_tensor;
using Inputs = std::vector<Value>;

namespace {

void check_matmul(const Shape& lhs, const Shape& rhs, bool ta, bool tb) {
  INFO("matmul ", shape_str(lhs), " x ", shape_str(rhs), " transpose_a ", ta, " transpose_b ", tb);
  check_gradients([&](Builder& b, const Inputs& x) { return ops::matmul(b, x[0], x[1], ta, tb); },
                  {random_tensor(lhs, 1), random_tensor(rhs, 2)});
}

}  // namespace

TEST_CASE("matmul gradient for every transpose flag combination") {
  // Square operands: a rule with a wrong flag still has the right shapes here, so
  // only the values can catch it.
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) check_matmul({3, 3}, {3, 3}, ta, tb);
  check_matmul({3, 4}, {4, 5}, false, false);
  check_matmul({3, 4}, {5, 4}, false, true);
  check_matmul({4, 3}, {4, 5}, true, false);
  check_matmul({4, 3}, {5, 4}, true, true);
  check_matmul({1, 4}, {4, 1}, false, false);  // vector products as 1-row and 1-column matrices
  check_matmul({4, 1}, {1, 4}, true, true);
}

TEST_CASE("batched matmul gradient") {
  check_matmul({2, 3, 4}, {2, 4, 5}, false, false);
  check_matmul({2, 4, 3}, {2, 5, 4}, true, true);
  check_matmul({2, 2, 3, 2}, {2, 2, 2, 3}, false, false);
}

TEST_CASE("batched matmul gradient sums over broadcast batch dims") {
  check_matmul({3, 4}, {2, 4, 5}, false, false);       // lhs lacks the batch dim
  check_matmul({2, 3, 4}, {4, 5}, false, false);       // rhs lacks it
  check_matmul({1, 3, 4}, {2, 4, 5}, false, false);    // lhs has it as 1
  check_matmul({2, 1, 3, 4}, {3, 5, 4}, false, true);  // both broadcast: [2,1] and [3] -> [2,3]
  check_matmul({2, 4, 3}, {1, 2, 4, 5}, true, false);  // rank mismatch and a size-1 dim
  check_matmul({3, 1, 4, 3}, {2, 5, 4}, true, true);
}

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

TEST_CASE("matmul gradient of gradient") {
  // dA of sum(op(A) op(B) * W) is a matmul of W and B; differentiating that with
  // respect to B and W runs matmul's rule on the rule's own matmul.
  const auto check = [](const Shape& lhs, const Shape& rhs, const Shape& w, bool ta, bool tb) {
    INFO("grad of grad of matmul ", shape_str(lhs), " x ", shape_str(rhs), " transpose_a ", ta, " transpose_b ", tb);
    check_gradients(
        [&](Builder& b, const Inputs& x) {
          const Value loss = ops::sum(b, ops::mul(b, ops::matmul(b, x[0], x[1], ta, tb), x[2]));
          const std::vector<Value> d = grad(b.graph(), loss, {x[0], x[1]});
          // Both gradients in one scalar, squared so that it depends on every input nonlinearly.
          return ops::add(b, ops::sum(b, ops::mul(b, d[0], d[0])), ops::sum(b, ops::mul(b, d[1], d[1])));
        },
        {random_tensor(lhs, 30), random_tensor(rhs, 31), random_tensor(w, 32)});
  };
  check({3, 4}, {4, 2}, {3, 2}, false, false);
  check({4, 3}, {2, 4}, {3, 2}, true, true);
  check({2, 3, 4}, {4, 2}, {2, 3, 2}, false, false);
  check({1, 4, 3}, {2, 4, 2}, {2, 3, 2}, true, false);
}
