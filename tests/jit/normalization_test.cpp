// softmax, log_softmax and layer_norm compiled, on small rows with hand-computed
// results. Random shapes, masks, edge values, threads and targets against the
// interpreter are the op table's rows (tests/op_table/rows_normalization.cpp).
#include <doctest/doctest.h>

#include <map>

#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

Tensor run_jit(const Graph& g, const std::map<std::string, Tensor>& bindings, size_t result = 0) {
  compiler::JitExecutable jit(g);
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  jit.run();
  return jit.output(jit.output_names()[result]);
}

Tensor row(std::vector<float> values) {
  Tensor::F32 t = Tensor::F32::from_shape({values.size()});
  std::copy(values.begin(), values.end(), t.begin());
  return Tensor(t);
}

}  // namespace

TEST_CASE("jit softmax and log_softmax of a small row give the hand-computed values") {
  for (const char* op : {"softmax", "log_softmax"}) {
    const Tensor y = run_jit(one_op_graph(op, {{DType::f32, {3}}}), {{"x0", row({1, 2, 3})}});
    // exp(k - 3) / (e^-2 + e^-1 + 1) and its log, k = 1, 2, 3.
    const std::vector<double> want = std::string(op) == "softmax"
                                         ? std::vector<double>{0.09003057, 0.24472847, 0.66524096}
                                         : std::vector<double>{-2.40760596, -1.40760596, -0.40760596};
    for (size_t k = 0; k < 3; ++k) CHECK(y.f32()(k) == doctest::Approx(want[k]).epsilon(1e-6));
  }
}

TEST_CASE("jit layer_norm of a small row gives the hand-computed values") {
  const Graph g = one_op_graph("layer_norm", {{DType::f32, {4}}, {DType::f32, {4}}, {DType::f32, {4}}}, {{"eps", 0.0}});
  // mean 2.5, variance 1.25: (x - 2.5) / sqrt(1.25) * gamma + beta.
  const std::map<std::string, Tensor> bindings = {
      {"x0", row({1, 2, 3, 4})}, {"x1", row({1, 1, 2, -1})}, {"x2", row({0, 0, 0, 10})}};
  const Tensor y = run_jit(g, bindings);
  const std::vector<double> want = {-1.34164079, -0.44721360, 0.89442719, 10 - 1.34164079};
  for (size_t k = 0; k < 4; ++k) CHECK(y.f32()(k) == doctest::Approx(want[k]).epsilon(1e-6));
  CHECK(run_jit(g, bindings, 1).f32()() == 2.5f);
  CHECK(run_jit(g, bindings, 2).f32()() == doctest::Approx(0.89442719).epsilon(1e-6));
}
