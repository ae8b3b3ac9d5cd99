// linear-cross-entropy: cross_entropy(matmul(h, w^T)) written out becomes one
// linear_cross_entropy that computes the same (on the interpreter, and compiled
// against the interpreter's run of the graph as written); a loss whose logits
// something else reads stays, with a remark saying why.
#include <doctest/doctest.h>

#include <sstream>

#include "compiler/passes/passes.h"
#include "engine/autodiff.h"
#include "engine/ir/builder.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"
#include "ops/loss.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// h [2, 3, 4] (or [6, 4]), a projection w [7, 4] read transposed (or [4, 7] read as
// stored), labels [2, 3] (or [6]) with one ignored.
Graph loss_graph(bool rows, bool stored_transposed, double smoothing) {
  const std::string h = rows ? "f32[6,4]" : "f32[2,3,4]", labels = rows ? "i32[6]" : "i32[2,3]";
  const std::string logits = rows ? "f32[6,7]" : "f32[2,3,7]";
  const std::string text = "graph @loss {\n  input %h : " + h + "\n  param %w : " +
                           (stored_transposed ? "f32[4,7]" : "f32[7,4]") + "\n  input %labels : " + labels +
                           "\n  %logits = matmul(%h, %w)" + (stored_transposed ? "" : " {transpose_b=true}") + " : " +
                           logits + "\n  %loss = cross_entropy(%logits, %labels) {smoothing=" +
                           std::to_string(smoothing) + ", ignore_index=0} : f32[]\n  output %loss\n}\n";
  return parse_kir(text, "loss.kir");
}

std::map<std::string, Tensor> loss_bindings(const Graph& g, Rng& rng) {
  std::map<std::string, Tensor> b = random_bindings(g, rng, Values::moderate);
  Tensor& labels = b.at("labels");
  int32_t next = 0;
  for (int32_t& l : labels.i32()) l = next++ % 7;  // label 0 is ignore_index
  return b;
}

}  // namespace

TEST_CASE("a loss over an output projection becomes one linear_cross_entropy and computes the same") {
  Rng rng(11);
  for (bool rows : {true, false})
    for (bool stored_transposed : {false, true}) {
      const Graph g = loss_graph(rows, stored_transposed, 0.1);
      CAPTURE(print_kir(g));
      std::ostringstream remarks;
      const Graph out = compiler::dce(compiler::rewrite_linear_cross_entropy(g, &remarks));
      CHECK(count_op(out, "linear_cross_entropy") == 1);
      CHECK(count_op(out, "cross_entropy") == 0);
      CHECK(count_op(out, "matmul") == 0);
      CHECK(remarks.str() == std::string("linear-cross-entropy: %loss = linear_cross_entropy(%h, %w") +
                                 (stored_transposed ? " transposed" : "") + ", %labels): the logits %logits " +
                                 (rows ? "[6,7]" : "[2,3,7]") + " are never written\n");
      const std::map<std::string, Tensor> bindings = loss_bindings(g, rng);
      CHECK(compare_observed(run_interpreter(g, bindings), run_interpreter(out, bindings), 1e-5, 1e-6) == "");
      // The default pipeline rewrites it too; the compiled kernel against the graph as written.
      check_jit_matches_interpreter(g, bindings, {1e-5, 1e-5, 0});
    }
}

TEST_CASE("a loss whose logits something else reads stays as written, with the reason") {
  const auto remark_of = [](const Graph& g) {
    std::ostringstream remarks;
    CHECK(count_op(compiler::rewrite_linear_cross_entropy(g, &remarks), "linear_cross_entropy") == 0);
    return remarks.str();
  };
  Graph g = loss_graph(true, false, 0.0);
  g.add_output(*g.find("logits"));  // as a training graph's backward reads them
  CHECK(remark_of(g) ==
        "linear-cross-entropy: %loss stays as written: %logits is read elsewhere too (a training graph's backward: "
        "build linear_cross_entropy before differentiating, as the Transformer does)\n");
  const Graph not_matmul = parse_kir(R"(graph @g {
  input %x : f32[6,7]
  input %labels : i32[6]
  %logits = exp(%x) : f32[6,7]
  %loss = cross_entropy(%logits, %labels) : f32[]
  output %loss
})",
                                     "g.kir");
  CHECK(remark_of(not_matmul) == "linear-cross-entropy: %loss stays as written: its logits are not a matmul's result\n");
  const Graph transposed_rows = parse_kir(R"(graph @g {
  input %h : f32[4,6]
  param %w : f32[7,4]
  input %labels : i32[6]
  %logits = matmul(%h, %w) {transpose_a=true, transpose_b=true} : f32[6,7]
  %loss = cross_entropy(%logits, %labels) : f32[]
  output %loss
})",
                                          "g.kir");
  CHECK(remark_of(transposed_rows) == "linear-cross-entropy: %loss stays as written: the matmul reads %h transposed\n");
}

TEST_CASE("a training step's loss and its gradient become one linear_cross_entropy_train") {
  Graph g("step");
  Builder b(g);
  const Value h = b.input("h", {DType::f32, {6, 4}}), w = b.param("w", {DType::f32, {7, 4}}),
              labels = b.input("labels", {DType::i32, {6}});
  const Value loss = ops::linear_cross_entropy(b, h, w, labels, 0.1, 0).first;
  g.rename(loss, "loss");
  g.add_output(loss);
  const std::vector<Value> d = grad(g, loss, {h, w});
  g.rename(d[0], "dh");
  g.rename(d[1], "dw");
  g.add_output(d[0]);
  g.add_output(d[1]);
  std::ostringstream remarks;
  const Graph out = compiler::dce(compiler::rewrite_linear_cross_entropy(g, &remarks));
  CHECK(count_op(out, "linear_cross_entropy_train") == 1);
  CHECK(count_op(out, "linear_cross_entropy") == 0);
  CHECK(count_op(out, "linear_cross_entropy_backward") == 0);
  CHECK(remarks.str() ==
        "linear-cross-entropy: %loss and its gradient %dh, %dw = linear_cross_entropy_train(...): the logits are "
        "made once\n");
  Rng rng(5);
  const std::map<std::string, Tensor> bindings = loss_bindings(g, rng);
  CHECK(compare_observed(run_interpreter(g, bindings), run_interpreter(out, bindings), 1e-5, 1e-6) == "");
  check_jit_matches_interpreter(g, bindings, {1e-5, 1e-4, 0});

  // A dloss made from the loss keeps the two apart.
  Graph scaled("scaled");
  Builder s(scaled);
  const Value h2 = s.input("h", {DType::f32, {6, 4}}), w2 = s.param("w", {DType::f32, {7, 4}}),
              labels2 = s.input("labels", {DType::i32, {6}});
  const Value loss2 = ops::linear_cross_entropy(s, h2, w2, labels2).first;
  scaled.rename(loss2, "loss");
  scaled.add_output(loss2);
  const Value dh2 = grad(scaled, loss2, {h2}, s.emit1("mul", {loss2, loss2}))[0];
  scaled.rename(dh2, "dh");
  scaled.add_output(dh2);
  std::ostringstream why;
  CHECK(count_op(compiler::rewrite_linear_cross_entropy(scaled, &why), "linear_cross_entropy_train") == 0);
  CHECK(why.str() == "linear-cross-entropy: the gradient %dh stays apart: its dloss depends on the loss\n");
}
