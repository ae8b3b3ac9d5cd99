// Gradient rule of cross_entropy: smoothing, ignored positions, any number of position dims.
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/loss.h"
#include "ops/op_test_util.h"

using namespace kiln;
using kiln::test::check_gradients;
using kiln::test::random_tensor;
using Inputs = std::vector<Value>;
using F = Tensor::F32;
using I = Tensor::I32;

namespace {

void check_cross_entropy(const Shape& logits, const I& labels, double smoothing, int64_t ignore_index = -100) {
  INFO("cross_entropy of ", shape_str(logits), " labels ", test::array_str(labels), " smoothing ", smoothing,
       " ignore_index ", ignore_index);
  check_gradients(
      [&](Builder& b, const Inputs& x) { return ops::cross_entropy(b, x[0], x[1], smoothing, ignore_index); },
      {random_tensor(logits, 1, -2.0f, 2.0f), labels});
}

// d loss / d logits for cross_entropy(logits, labels) itself as the loss.
Tensor logits_grad(const F& logits, const I& labels, double smoothing, int64_t ignore_index = -100) {
  Graph g;
  Builder b(g);
  const Value x = b.input("logits", Tensor(logits).type());
  const Value y = b.input("labels", Tensor(labels).type());
  b.output(grad(g, ops::cross_entropy(b, x, y, smoothing, ignore_index), {x})[0]);
  Interpreter exe(g);
  exe.bind("logits", Tensor(logits));
  exe.bind("labels", Tensor(labels));
  exe.run();
  return exe.output("logits.grad");
}

}  // namespace

TEST_CASE("cross_entropy gradient without smoothing") {
  check_cross_entropy({4, 5}, I{0, 3, 4, 3}, 0.0);
  check_cross_entropy({2, 3, 4}, I{{0, 1, 2}, {3, 3, 0}}, 0.0);
  check_cross_entropy({6}, I(2), 0.0);           // one position: labels are a scalar
  check_cross_entropy({3, 1}, I{0, 0, 0}, 0.0);  // one class: the loss is constant 0
}

TEST_CASE("cross_entropy gradient with label smoothing") {
  check_cross_entropy({4, 5}, I{0, 3, 4, 3}, 0.1);
  check_cross_entropy({2, 3, 4}, I{{0, 1, 2}, {3, 3, 0}}, 0.1);
  check_cross_entropy({3, 4}, I{1, 2, 0}, 1.0);  // all weight on the uniform target
}

TEST_CASE("cross_entropy gradient with ignored positions") {
  check_cross_entropy({4, 5}, I{0, -100, 4, -100}, 0.0);
  check_cross_entropy({4, 5}, I{0, -100, 4, -100}, 0.1);
  check_cross_entropy({2, 3, 4}, I{{1, 7, 2}, {7, 3, 0}}, 0.1, 7);
  check_cross_entropy({3, 4}, I{2, 0, 2}, 0.0, 2);  // a valid class used as ignore_index
}

TEST_CASE("cross_entropy gradient values") {
  // Two equal logits: softmax is [0.5, 0.5], so d = softmax - target.
  test::check_close(logits_grad(F{{0.0f, 0.0f}}, I{0}, 0.0), F{{-0.5f, 0.5f}});
  // Smoothing 0.1 over 2 classes: target [0.95, 0.05].
  test::check_close(logits_grad(F{{0.0f, 0.0f}}, I{1}, 0.1), F{{0.45f, -0.45f}});
  // Two positions, one ignored: the mean is over one position, the ignored row gets 0.
  test::check_close(logits_grad(F{{0.0f, 0.0f}, {5.0f, 1.0f}}, I{1, -100}, 0.0), F{{0.5f, -0.5f}, {0.0f, 0.0f}});
  // Two kept positions: each row's gradient is halved. softmax([ln 3, 0]) = [0.75, 0.25].
  test::check_close(logits_grad(F{{std::log(3.0f), 0.0f}, {0.0f, 0.0f}}, I{0, 0}, 0.0),
                    F{{-0.125f, 0.125f}, {-0.25f, 0.25f}});
  // Every position ignored: the loss is the constant 0 and so is its gradient.
  test::check_equal(logits_grad(F{{1.0f, 2.0f}, {3.0f, 0.0f}}, I{-100, -100}, 0.1), F{{0, 0}, {0, 0}});
}

TEST_CASE("cross_entropy gradient of gradient") {
  // d logits is built from softmax, mul, sub and div; differentiating it again runs their rules.
  const auto check = [](const Shape& logits, const I& labels, double smoothing) {
    INFO("grad of grad of cross_entropy of ", shape_str(logits), " labels ", test::array_str(labels), " smoothing ",
         smoothing);
    check_gradients(
        [&](Builder& b, const Inputs& x) {
          return grad(b.graph(), ops::cross_entropy(b, x[0], x[1], smoothing), {x[0]})[0];
        },
        {random_tensor(logits, 50, -2.0f, 2.0f), labels});
  };
  check({3, 4}, I{1, 3, 0}, 0.0);
  check({2, 2, 3}, I{{2, -100}, {0, 1}}, 0.1);
}
