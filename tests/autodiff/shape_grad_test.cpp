// Gradient rules of the shape ops: reshape, transpose, broadcast, slice, concat.
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/elementwise.h"
#include "ops/op_test_util.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

using namespace kiln;
using kiln::test::check_gradients;
using kiln::test::random_tensor;
using Inputs = std::vector<Value>;

TEST_CASE("reshape gradient") {
  const auto check = [](const Shape& from, const Shape& to) {
    INFO("reshape ", shape_str(from), " to ", shape_str(to));
    check_gradients([&](Builder& b, const Inputs& x) { return ops::reshape(b, x[0], to); }, {random_tensor(from, 1)});
  };
  check({2, 3, 4}, {6, 4});
  check({2, 3, 4}, {4, -1});
  check({2, 3, 4}, {-1});
  check({6}, {3, 1, 2});
  check({}, {1, 1});
  check({1, 5}, {5});
}

TEST_CASE("transpose gradient uses the inverse permutation") {
  const auto check = [](const Shape& shape, const std::vector<int64_t>& perm) {
    INFO("transpose ", shape_str(shape), " by ", shape_str(perm));
    check_gradients([&](Builder& b, const Inputs& x) { return ops::transpose(b, x[0], perm); },
                    {random_tensor(shape, 2)});
  };
  check({3, 4}, {1, 0});
  // Three-cycles, whose inverse is the other cycle: a rule reusing perm fails here.
  check({3, 3, 3}, {2, 0, 1});  // equal dims: only the values show a wrong permutation
  check({2, 3, 4}, {2, 0, 1});
  check({2, 3, 4}, {1, 2, 0});
  check({2, 3, 4}, {0, 2, 1});
  check({2, 1, 3, 2}, {3, 1, 0, 2});
}

TEST_CASE("broadcast gradient sums over the broadcast dims") {
  const auto check = [](const Shape& from, const Shape& to) {
    INFO("broadcast ", shape_str(from), " to ", shape_str(to));
    check_gradients([&](Builder& b, const Inputs& x) { return ops::broadcast(b, x[0], to); }, {random_tensor(from, 3)});
  };
  check({3}, {2, 3});
  check({2, 1}, {2, 4});
  check({}, {3, 2});
  check({1, 3, 1}, {2, 3, 4});
  check({4}, {2, 3, 4});
  check({2, 3}, {2, 3});
}

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

TEST_CASE("slice gradient") {
  const auto check = [](const Shape& shape, std::vector<int64_t> axes, std::vector<int64_t> starts,
                        std::vector<int64_t> ends) {
    INFO("slice of ", shape_str(shape), " axes ", shape_str(axes), " starts ", shape_str(starts), " ends ",
         shape_str(ends));
    check_gradients([&](Builder& b, const Inputs& x) { return ops::slice(b, x[0], axes, starts, ends); },
                    {random_tensor(shape, 4)});
  };
  check({6}, {0}, {1}, {4});
  check({4, 5}, {0, 1}, {1, -4}, {-1, 4});
  check({3, 4, 5}, {-1, 0}, {-3, 0}, {100, 2});  // end clamped to the dim
  check({3, 4, 5}, {1}, {-2}, {4});              // cut before only
  check({3, 4, 5}, {2}, {0}, {1});               // cut after only
  check({3, 4, 5}, {0, 1, 2}, {1, 1, 1}, {2, 3, 4});
  check({2, 3}, {0}, {0}, {2});  // the whole axis: the gradient is dy itself
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

TEST_CASE("concat gradient along each axis") {
  const auto check = [](const std::vector<Shape>& shapes, int64_t axis) {
    INFO("concat along axis ", axis, " of ", shapes.size(), " operands, first ", shape_str(shapes[0]));
    std::vector<Tensor> values;
    for (size_t i = 0; i < shapes.size(); ++i) values.push_back(random_tensor(shapes[i], 10 + i));
    check_gradients([&](Builder& b, const Inputs& x) { return ops::concat(b, x, axis); }, values);
  };
  check({{2, 3}, {1, 3}, {3, 3}}, 0);
  check({{2, 1}, {2, 3}}, 1);
  check({{2, 1}, {2, 3}}, -1);
  check({{2, 3, 1}, {2, 3, 2}, {2, 3, 1}}, 2);
  check({{1, 3, 2}, {2, 3, 2}}, 0);
  check({{2, 1, 2}, {2, 2, 2}, {2, 3, 2}}, 1);
  check({{4}}, 0);             // a single operand gets dy itself
  check({{2, 3}, {0, 3}}, 0);  // an empty operand gets an empty gradient
}

TEST_CASE("shape op gradients of gradients") {
  // dx of sum(chain(x) * w) is the chain's rules applied to w (reshape, concat,
  // slice, fill, transpose, sum); differentiating it with respect to w runs the
  // rules of those ops in turn.
  check_gradients(
      [](Builder& b, const Inputs& x) {
        Value y = ops::broadcast(b, x[0], {2, 4, 3});
        y = ops::transpose(b, y, {2, 0, 1});                                               // [3,2,4]
        y = ops::slice(b, y, {0, 2}, {1, -3}, {3, 100});                                   // [2,2,3]
        y = ops::concat(b, {ops::reshape(b, y, {4, 3}), ops::reshape(b, y, {-1, 3})}, 1);  // [4,6]
        const Value loss = ops::sum(b, ops::mul(b, y, x[1]));
        return grad(b.graph(), loss, {x[0]})[0];
      },
      {random_tensor({2, 1, 3}, 20), random_tensor({4, 6}, 21)});
}
