// cross_entropy's gradient at exact values: softmax minus the (smoothed)
// target, averaged over the positions kept. Finite-difference checks and grad of
// grad are the op table's (tests/op_table/rows_loss.cpp).
#include <doctest/doctest.h>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "ops/loss.h"
#include "ops/op_test_util.h"

using namespace kiln;
using F = Tensor::F32;
using I = Tensor::I32;

namespace {

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
