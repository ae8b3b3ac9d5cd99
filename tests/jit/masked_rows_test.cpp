// Rows with nothing to attend to: softmax and log_softmax of a line that is all
// -inf (an additive mask that drops every key) give 0 and -inf, finite gradients,
// in the interpreter and in the compiled kernels, alone and fused into the
// attention pattern softmax(x * scale + mask). flash_attention's own case is in
// attention_test.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "differential.h"
#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kRows = 5, kCols = 19;  // 19: a vector and a remainder

// x f32[5,19] and a mask that drops all of row `masked_row` (and one key of the
// others); `normalize(x * 0.5 + mask)` along `axis`, and the gradient of
// sum(result * r) with respect to x.
Graph masked_graph(const std::string& op, int64_t axis) {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {kRows, kCols}});
  const Value mask = b.input("mask", {DType::f32, {kRows, kCols}});
  const Value r = b.input("r", {DType::f32, {kRows, kCols}});
  const Value scores = ops::add(b, ops::mul(b, x, ops::fill(b, {}, 0.5)), mask);
  const Value y = b.emit1(op, {scores}, {{"axis", axis}}, "y");
  b.output(y);
  // The loss itself may be -inf * r (log_softmax); only its gradient, r, matters.
  b.output(grad(g, ops::sum(b, ops::mul(b, y, r)), {x}).at(0));
  return g;
}

std::map<std::string, Tensor> masked_bindings(const Graph& g, int64_t masked_row, int64_t axis) {
  Rng rng(17);
  std::map<std::string, Tensor> bindings = random_bindings(g, rng);
  auto mask = Tensor::F32::from_shape({kRows, kCols});
  for (int64_t i = 0; i < kRows; ++i)
    for (int64_t j = 0; j < kCols; ++j) {
      const bool line_masked = (axis == 1 ? i : j) == masked_row;
      mask(i, j) = line_masked || (i + j) % 7 == 0 ? -kInf : 0.0f;
    }
  bindings.insert_or_assign("mask", Tensor(std::move(mask)));
  return bindings;
}

}  // namespace

TEST_CASE("softmax and log_softmax of a fully masked line give 0 and -inf, and finite gradients") {
  for (const char* op : {"softmax", "log_softmax"})
    for (int64_t axis : {1, 0}) {  // rows (the attention layout) and columns
      INFO(op, " along axis ", axis);
      const Graph g = masked_graph(op, axis);
      const auto bindings = masked_bindings(g, 2, axis);
      Interpreter interp(g);
      for (const auto& [name, t] : bindings) interp.bind(name, t);
      interp.run();
      const Tensor::F32& y = interp.output("y").f32();
      const Tensor::F32& dx = interp.output("x.grad").f32();
      const float empty = std::string(op) == "softmax" ? 0.0f : -kInf;
      for (int64_t k = 0; k < (axis == 1 ? kCols : kRows); ++k) {
        const auto [i, j] = axis == 1 ? std::pair{int64_t{2}, k} : std::pair{k, int64_t{2}};
        CHECK(y(i, j) == empty);
        if (empty == 0.0f) CHECK(dx(i, j) == 0.0f);  // softmax: weights 0 pass no gradient
      }
      CHECK(xt::all(xt::isfinite(dx)));
      // The compiled kernels (fused with the scale and the mask) agree, bit for
      // bit on the masked line.
      check_jit_matches_interpreter(g, bindings, {1e-6, 1e-5});
    }
}
