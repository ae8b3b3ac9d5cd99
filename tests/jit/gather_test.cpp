// gather and scatter_add compiled alone against the interpreter: random table
// shapes and dtypes, index shapes of rank 0 to 2, every axis, duplicate indices,
// and out-of-range indices reported as run-time errors without touching memory
// out of bounds (the ASan build checks that).
//
// Tolerance: exact. gather copies elements; scatter_add adds each result
// element's updates in index order starting from 0, as the reference does, so
// even f32 sums round identically.
#include <doctest/doctest.h>

#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr Tolerance kExact{0, 0};

// Indices in [0, dim), drawn from a few values so that duplicates are common.
Tensor random_indices(Rng& rng, const Shape& shape, int64_t dim) {
  Tensor t = Tensor::zeros({DType::i32, shape});
  const int64_t distinct = rng.coin() ? dim : std::min<int64_t>(dim, 3);
  for (int32_t& v : t.i32()) v = static_cast<int32_t>(rng.uniform(0, distinct - 1) * (dim / distinct));
  return t;
}

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

Tensor run_jit(const Graph& g, const std::map<std::string, Tensor>& bindings) {
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

// A random shape of rank [min_rank, max_rank] with no zero dims.
Shape shape_of_rank(Rng& rng, int64_t min_rank, int64_t max_rank) {
  Shape s;
  const int64_t rank = rng.uniform(min_rank, max_rank);
  for (int64_t k = 0; k < rank; ++k) s.push_back(rng.pick(std::vector<int64_t>{1, 2, 3, 5, 15, 16, 17, 33}));
  return s;
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
  CHECK(run_jit(rows, {{"x0", table}, {"x1", tensor_i32({3}, {2, 0, 2})}}).f32() ==
        tensor_f32({3, 2}, {5, 6, 1, 2, 5, 6}).f32());
  const Graph columns = one_op_graph("gather", {{DType::f32, {3, 2}}, {DType::i32, {2, 2}}}, {{"axis", int64_t{1}}});
  CHECK(run_jit(columns, {{"x0", table}, {"x1", tensor_i32({2, 2}, {1, 0, 1, 1})}}).f32() ==
        tensor_f32({3, 2, 2}, {2, 1, 2, 2, 4, 3, 4, 4, 6, 5, 6, 6}).f32());

  // Rows 0 and 1 of the updates both land on row 1.
  const Graph scatter = one_op_graph("scatter_add", {{DType::f32, {3, 2}}, {DType::i32, {3}}}, {{"size", int64_t{3}}});
  CHECK(run_jit(scatter, {{"x0", table}, {"x1", tensor_i32({3}, {1, 1, 0})}}).f32() ==
        tensor_f32({3, 2}, {5, 6, 4, 6, 0, 0}).f32());
  const Graph scatter_columns = one_op_graph("scatter_add", {{DType::f32, {3, 2}}, {DType::i32, {2}}},
                                             {{"axis", int64_t{1}}, {"size", int64_t{4}}});
  CHECK(run_jit(scatter_columns, {{"x0", table}, {"x1", tensor_i32({2}, {3, 3})}}).f32() ==
        tensor_f32({3, 4}, {0, 0, 0, 3, 0, 0, 0, 7, 0, 0, 0, 11}).f32());
}

TEST_CASE("jit gather matches the interpreter for every axis and dtype") {
  Rng rng(51);
  for (DType dtype : {DType::f32, DType::i32, DType::boolean})
    for (int i = 0; i < 30; ++i) {
      const Shape table = shape_of_rank(rng, 1, 3), indices = shape_of_rank(rng, 0, 2);
      const auto rank = static_cast<int64_t>(table.size());
      const int64_t axis = rng.uniform(-rank, rank - 1);
      const Graph g = one_op_graph("gather", {{dtype, table}, {DType::i32, indices}}, {{"axis", axis}});
      INFO(print_kir(g));
      std::map<std::string, Tensor> bindings = random_bindings(g, rng);
      bindings.at("x1") = random_indices(rng, indices, table[static_cast<size_t>(axis < 0 ? axis + rank : axis)]);
      check_jit_matches_interpreter(g, bindings, kExact);
    }
}

TEST_CASE("jit scatter_add matches the interpreter for every axis and dtype") {
  Rng rng(52);
  for (DType dtype : {DType::f32, DType::i32})
    for (int i = 0; i < 30; ++i) {
      // updates = outer + indices + inner, the result outer + [size] + inner.
      const Shape outer = shape_of_rank(rng, 0, 2), indices = shape_of_rank(rng, 0, 2);
      const Shape inner = shape_of_rank(rng, 0, 2);
      Shape updates = outer;
      updates.insert(updates.end(), indices.begin(), indices.end());
      updates.insert(updates.end(), inner.begin(), inner.end());
      const int64_t size = rng.pick(std::vector<int64_t>{1, 2, 5, 17});
      const auto axis = static_cast<int64_t>(outer.size());
      const int64_t result_rank = axis + 1 + static_cast<int64_t>(inner.size());
      const Graph g = one_op_graph("scatter_add", {{dtype, updates}, {DType::i32, indices}},
                                   {{"axis", rng.coin() ? axis : axis - result_rank}, {"size", size}});
      INFO(print_kir(g));
      std::map<std::string, Tensor> bindings = random_bindings(g, rng);
      bindings.at("x1") = random_indices(rng, indices, size);
      check_jit_matches_interpreter(g, bindings, kExact);
    }
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

TEST_CASE("jit scatter_add over large tables is thread-count independent") {
  Rng rng(53);
  // Embedding gradient (axis 0, many duplicate rows) and a per-row scatter (axis 1).
  const std::vector<std::pair<Shape, int64_t>> cases = {{{3000, 200}, 50}, {{64, 700, 33}, 9}};
  for (const auto& [updates, size] : cases) {
    const int64_t axis = updates.size() == 2 ? 0 : 1;
    const Shape indices{updates[static_cast<size_t>(axis)]};
    const Graph g =
        one_op_graph("scatter_add", {{DType::f32, updates}, {DType::i32, indices}}, {{"axis", axis}, {"size", size}});
    std::map<std::string, Tensor> bindings = random_bindings(g, rng, Values::moderate);
    bindings.at("x1") = random_indices(rng, indices, size);
    check_jit_matches_interpreter(g, bindings, kExact);
    compiler::JitExecutable jit(g);
    for (const auto& [name, t] : bindings) jit.bind(name, t);
    std::vector<Tensor> results;
    for (int threads : {1, 4}) {
      kiln_set_num_threads(threads);
      jit.run();
      results.push_back(jit.output(jit.output_names()[0]));
    }
    kiln_set_num_threads(0);
    CHECK(compare_tensors(results[0], results[1], kExact) == "");
  }
}

TEST_CASE("jit gather and scatter_add match the interpreter on AVX2 and SSE targets") {
  Rng rng(54);
  for (const char* cpu : {"haswell", "x86-64"}) {
    INFO("target " << cpu);
    const compiler::JitOptions options = jit_for_cpu(cpu);
    for (int64_t axis : {0, 1}) {
      const Graph g = one_op_graph("gather", {{DType::f32, {17, 19}}, {DType::i32, {5, 3}}}, {{"axis", axis}});
      std::map<std::string, Tensor> bindings = random_bindings(g, rng);
      bindings.at("x1") = random_indices(rng, {5, 3}, axis == 0 ? 17 : 19);
      check_jit_matches_interpreter(g, bindings, kExact, 1, options);
    }
    const Graph g = one_op_graph("scatter_add", {{DType::f32, {6, 37}}, {DType::i32, {6}}}, {{"size", int64_t{4}}});
    std::map<std::string, Tensor> bindings = random_bindings(g, rng);
    bindings.at("x1") = random_indices(rng, {6}, 4);
    check_jit_matches_interpreter(g, bindings, kExact, 1, options);
  }
}
