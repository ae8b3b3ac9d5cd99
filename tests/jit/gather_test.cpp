// gather and scatter_add compiled: hand-computed values, and out-of-range
// indices reported as run-time errors like the interpreter's, without touching
// memory out of bounds (the ASan build checks that). Random shapes, dtypes,
// axes, threads and targets against the interpreter are the op table's rows
// (tests/op_table/rows_gather.cpp).
#include <doctest/doctest.h>

#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

Tensor tensor_i32(const Shape& shape, std::vector<int32_t> values) {
  Tensor t = Tensor::zeros({DType::i32, shape});
  std::copy(values.begin(), values.end(), t.i32().begin());
  return t;
}

Tensor tensor_f32(const Shape& shape, std::vector<float> values) {
  Tensor t = Tensor::zeros({DType::f32, shape});
  std::copy(values.begin(), values.end(), t.f32().begin());
  return t;
}

Tensor run_gather(const Graph& g, const std::map<std::string, Tensor>& bindings) {
  compiler::JitExecutable jit(g);
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  jit.run();
  return jit.output(jit.output_names()[0]);
}

// The interpreter's message for a run it rejects ("" if it runs).
std::string interpreter_error(const Graph& g, const std::map<std::string, Tensor>& bindings) {
  Interpreter interp(g);
  for (const auto& [name, t] : bindings) interp.bind(name, t);
  try {
    interp.run();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Both backends run (or fail with the same message) on g with `bindings`.
void check_same_outcome(const Graph& g, const std::map<std::string, Tensor>& bindings) {
  INFO(print_kir(g));
  const std::string message = interpreter_error(g, bindings);
  REQUIRE(message != "");
  compiler::JitExecutable jit(g);
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  CHECK_THROWS_WITH_AS(jit.run(), message.c_str(), Error);
}

}  // namespace

TEST_CASE("jit gather and scatter_add give the hand-computed values") {
  const Tensor table = tensor_f32({3, 2}, {1, 2, 3, 4, 5, 6});
  const Graph rows = one_op_graph("gather", {{DType::f32, {3, 2}}, {DType::i32, {3}}});
  CHECK(run_gather(rows, {{"x0", table}, {"x1", tensor_i32({3}, {2, 0, 2})}}).f32() ==
        tensor_f32({3, 2}, {5, 6, 1, 2, 5, 6}).f32());
  const Graph columns = one_op_graph("gather", {{DType::f32, {3, 2}}, {DType::i32, {2, 2}}}, {{"axis", int64_t{1}}});
  CHECK(run_gather(columns, {{"x0", table}, {"x1", tensor_i32({2, 2}, {1, 0, 1, 1})}}).f32() ==
        tensor_f32({3, 2, 2}, {2, 1, 2, 2, 4, 3, 4, 4, 6, 5, 6, 6}).f32());

  // Rows 0 and 1 of the updates both land on row 1.
  const Graph scatter = one_op_graph("scatter_add", {{DType::f32, {3, 2}}, {DType::i32, {3}}}, {{"size", int64_t{3}}});
  CHECK(run_gather(scatter, {{"x0", table}, {"x1", tensor_i32({3}, {1, 1, 0})}}).f32() ==
        tensor_f32({3, 2}, {5, 6, 4, 6, 0, 0}).f32());
  const Graph scatter_columns = one_op_graph("scatter_add", {{DType::f32, {3, 2}}, {DType::i32, {2}}},
                                             {{"axis", int64_t{1}}, {"size", int64_t{4}}});
  CHECK(run_gather(scatter_columns, {{"x0", table}, {"x1", tensor_i32({2}, {3, 3})}}).f32() ==
        tensor_f32({3, 4}, {0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0, 11}).f32());
}

TEST_CASE("jit gather and scatter_add report out-of-range indices as the interpreter does") {
  for (int32_t bad : {3, 1000, -1, INT32_MIN}) {
    INFO("index " << bad);
    const Tensor table = tensor_f32({3, 17}, std::vector<float>(51, 1.0f));
    check_same_outcome(one_op_graph("gather", {{DType::f32, {3, 17}}, {DType::i32, {4}}}),
                       {{"x0", table}, {"x1", tensor_i32({4}, {0, 2, bad, 1})}});
    check_same_outcome(
        one_op_graph("gather", {{DType::f32, {17, 3}}, {DType::i32, {2, 2}}}, {{"axis", int64_t{1}}}),
        {{"x0", tensor_f32({17, 3}, std::vector<float>(51, 1.0f))}, {"x1", tensor_i32({2, 2}, {0, bad, 2, 1})}});
    check_same_outcome(
        one_op_graph("scatter_add", {{DType::f32, {4, 17}}, {DType::i32, {4}}}, {{"size", int64_t{3}}}),
        {{"x0", tensor_f32({4, 17}, std::vector<float>(68, 1.0f))}, {"x1", tensor_i32({4}, {0, 2, bad, 1})}});
  }
  // No rows to look up or add to: every index is out of range, even where the
  // result has no elements.
  check_same_outcome(one_op_graph("gather", {{DType::f32, {0, 2}}, {DType::i32, {1}}}),
                     {{"x0", Tensor::zeros({DType::f32, {0, 2}})}, {"x1", tensor_i32({1}, {0})}});
  check_same_outcome(one_op_graph("scatter_add", {{DType::f32, {2, 5}}, {DType::i32, {2}}}, {{"size", int64_t{0}}}),
                     {{"x0", tensor_f32({2, 5}, std::vector<float>(10, 1.0f))}, {"x1", tensor_i32({2}, {0, 0})}});
}
