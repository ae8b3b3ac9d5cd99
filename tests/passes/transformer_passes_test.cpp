// The default pipeline on a real graph: the tiny Transformer's whole training step
// (forward, backward, Adam, dropout keyed by the step) keeps its loss, learning
// rate and every updated param and moment on the Interpreter, over two steps.
#include <doctest/doctest.h>

#include "compiler/passes/pass_manager.h"
#include "engine/interpreter.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "models/transformer/transformer.h"
#include "models/transformer_test_inputs.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

Observed two_steps(const Graph& g) {
  Interpreter exe(g);
  bind_batch(exe, sample_batch(5));
  bind_initial_values(exe, 7);
  exe.run();
  exe.run();
  Observed o;
  for (const std::string& name : exe.output_names()) o.outputs.emplace(name, exe.output(name));
  for (Value v : g.declarations())
    if (g.value(v).kind != ValueKind::input) o.persistent.emplace(g.name_of(v), exe.binding(g.name_of(v)));
  return o;
}

}  // namespace

TEST_CASE("the pipeline keeps the tiny Transformer's training step") {
  const models::TransformerConfig cfg = tiny_config(16, 0.1);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  const Graph g = models::build_train_graph(cfg, 2, 5, 5, adam);
  compiler::PassOptions opts;
  opts.verify_each = true;
  const Graph out = compiler::run_passes(g, opts);
  CHECK(out.nodes().size() < g.nodes().size());
  CHECK(compiler::pass_invariant_problems(g, out).empty());
  const std::string text = print_kir(out);
  CHECK(print_kir(parse_kir(text, "train_step.kir")) == text);
  // Bitwise: none of simplify's inexact rewrites (x*a*b) applies to this graph.
  CHECK(compare_observed(two_steps(g), two_steps(out)) == "");
}
