// Gradient checks generated from the op table: each differentiable row's
// gradient samples against central differences (autodiff/gradcheck.h), and the
// gradient of its gradient the same way.
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/autodiff.h"
#include "engine/ir/builder.h"
#include "op_graph.h"
#include "op_table.h"
#include "samples.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// The row's op on `in`, the results its loss weights.
std::vector<Value> weighted_results(const OpInfo& row, const Sample& s, Builder& b, const std::vector<Value>& in) {
  const std::vector<Value> all = emit_op(b, row.name, in, s.attrs, s.body);
  if (row.grad_results.empty()) return all;
  std::vector<Value> picked;
  for (size_t i : row.grad_results) picked.push_back(all.at(i));
  return picked;
}

bool is_constant(const OpInfo& row, size_t i) {
  const std::vector<size_t>& c = row.grad_options.constant;
  return std::find(c.begin(), c.end(), i) != c.end();
}

}  // namespace

TEST_CASE("op table: every op's gradient matches finite differences") {
  for (const OpInfo* row : rows_under_test()) {
    if (!row->grad_samples) continue;
    Rng rng = row_rng(*row, 1);
    const std::vector<Sample> samples = row->grad_samples(rng);
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      INFO("op " << row->name << ", gradient sample " << i);
      CHECK_NOTHROW(check_gradients(
          [&](Builder& b, const std::vector<Value>& in) { return weighted_results(*row, s, b, in); }, s.operands,
          row->grad_options));
    }
  }
}

// The first gradient, of sum over results of sum(y_j * W_j), is a function of
// the op's inputs and of the W_j; its gradient with respect to both (W_j too,
// where a linear op's rule has no second derivative in x) runs the rule's own
// ops' rules.
TEST_CASE("op table: every op's gradient of gradient matches finite differences of the gradient") {
  for (const OpInfo* row : rows_under_test()) {
    if (!row->grad_samples || !row->no_grad_of_grad.empty()) continue;
    Rng rng = row_rng(*row, 2);
    const std::vector<Sample> samples = row->grad_samples(rng);
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      INFO("op " << row->name << ", gradient sample " << i);
      const size_t n = s.operands.size();
      std::vector<Tensor> values = s.operands;
      {
        Graph scratch;
        Builder b(scratch);
        std::vector<Value> in;
        for (const Tensor& t : s.operands) in.push_back(b.input(scratch.fresh_name("x"), t.type()));
        for (Value y : weighted_results(*row, s, b, in)) values.push_back(uniform(rng, b.type(y).shape, 0.5f, 1.5f));
      }
      const auto first_gradient = [&](Builder& b, const std::vector<Value>& in) {
        const std::vector<Value> operands(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
        const std::vector<Value> ys = weighted_results(*row, s, b, operands);
        Value loss;
        for (size_t j = 0; j < ys.size(); ++j) {
          const Value term = b.emit1("sum", {b.emit1("mul", {ys[j], in[n + j]})});
          loss = j == 0 ? term : b.emit1("add", {loss, term});
        }
        std::vector<Value> wrt;
        for (size_t k = 0; k < n; ++k)
          if (s.operands[k].dtype() == DType::f32 && !is_constant(*row, k)) wrt.push_back(operands[k]);
        return grad(b.graph(), loss, wrt);
      };
      CHECK_NOTHROW(check_gradients(first_gradient, values, row->grad_options));
    }
  }
}
