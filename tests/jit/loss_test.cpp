// cross_entropy compiled: hand-computed losses, and labels out of range reported
// as run-time errors like the interpreter's. Random shapes, attributes, masked
// and edge logits, threads and targets against the interpreter are the op
// table's row (tests/op_table/rows_loss.cpp).
#include <doctest/doctest.h>

#include <cmath>

#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

Graph loss_graph(const Shape& logits, double smoothing, int64_t ignore_index) {
  const Shape positions(logits.begin(), logits.end() - 1);
  return one_op_graph("cross_entropy", {{DType::f32, logits}, {DType::i32, positions}},
                      {{"smoothing", smoothing}, {"ignore_index", ignore_index}});
}

Tensor tensor_f32(const Shape& shape, std::vector<float> values) {
  Tensor t = Tensor::zeros({DType::f32, shape});
  std::copy(values.begin(), values.end(), t.f32().begin());
  return t;
}

Tensor tensor_i32(const Shape& shape, std::vector<int32_t> values) {
  Tensor t = Tensor::zeros({DType::i32, shape});
  std::copy(values.begin(), values.end(), t.i32().begin());
  return t;
}

float jit_loss(const Graph& g, const std::map<std::string, Tensor>& bindings) {
  compiler::JitExecutable jit(g);
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  jit.run();
  return jit.output(jit.output_names()[0]).f32()();
}

}  // namespace

TEST_CASE("jit cross_entropy gives the hand-computed losses") {
  // log_softmax([1, 2, 3]) = [-2.40760596, -1.40760596, -0.40760596].
  const Tensor logits = tensor_f32({2, 3}, {1, 2, 3, 3, 2, 1});
  // Row 0, label 2: 0.40760596. Row 1, label 0: the same (reversed logits).
  CHECK(jit_loss(loss_graph({2, 3}, 0.0, -100), {{"x0", logits}, {"x1", tensor_i32({2}, {2, 0})}}) ==
        doctest::Approx(0.40760596).epsilon(1e-6));
  // Smoothing 0.1: 0.9 * 0.40760596 + 0.1 / 3 * (2.40760596 + 1.40760596 + 0.40760596).
  CHECK(jit_loss(loss_graph({2, 3}, 0.1, -100), {{"x0", logits}, {"x1", tensor_i32({2}, {2, 0})}}) ==
        doctest::Approx(0.50760596).epsilon(1e-6));
  // Row 1 ignored (label == ignore_index 1, a valid class): row 0 alone, label 0.
  CHECK(jit_loss(loss_graph({2, 3}, 0.0, 1), {{"x0", logits}, {"x1", tensor_i32({2}, {0, 1})}}) ==
        doctest::Approx(2.40760596).epsilon(1e-6));
  // Every row ignored: 0, not 0 / 0.
  CHECK(jit_loss(loss_graph({2, 3}, 0.0, -100), {{"x0", logits}, {"x1", tensor_i32({2}, {-100, -100})}}) == 0.0f);
}

TEST_CASE("jit cross_entropy reports labels out of range as the interpreter does") {
  for (int32_t bad : {3, 100, -1, -101}) {
    const Graph g = loss_graph({4, 3}, 0.1, -100);
    std::map<std::string, Tensor> bindings = {{"x0", tensor_f32({4, 3}, std::vector<float>(12, 0.5f))},
                                              {"x1", tensor_i32({4}, {0, -100, bad, 2})}};
    INFO("label " << bad);
    Interpreter interp(g);
    compiler::JitExecutable jit(g);
    for (const auto& [name, t] : bindings) {
      interp.bind(name, t);
      jit.bind(name, t);
    }
    std::string message;
    try {
      interp.run();
    } catch (const Error& e) {
      message = e.what();
    }
    CHECK(message.find("out of range") != std::string::npos);
    CHECK_THROWS_WITH_AS(jit.run(), message.c_str(), Error);
    // Once the label is fixed, the same executable runs again.
    jit.bind("x1", tensor_i32({4}, {0, -100, 1, 2}));
    CHECK_NOTHROW(jit.run());
    CHECK(jit.output(jit.output_names()[0]).f32()() == doctest::Approx(std::log(3.0)));
  }
}
