// The Transformer's model scopes: every node it builds names its part
// (enc.0.self_attn, dec.1.ffn (backward), loss, optimizer, ...), and every pass
// of the default pipeline and the program keep them.
#include <doctest/doctest.h>

#include <set>

#include "compiler/passes/pass_manager.h"
#include "compiler/schedule/program.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "models/optimizer.h"
#include "models/transformer/decoder_step.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;

namespace {

// Nodes without a scope, with a fusion's body nodes counted too.
size_t unscoped(const Graph& g) {
  size_t n = 0;
  for (const Node& node : g.nodes()) {
    n += node.loc.scopes.empty();
    if (node.body) n += unscoped(*node.body);
  }
  return n;
}

// The scopes of the node that makes the value named `name`.
std::vector<std::string> scopes_of(const Graph& g, const std::string& name) {
  const auto v = g.find(name);
  REQUIRE_MESSAGE(v, name);
  return g.producer(*v).loc.scopes;
}

std::set<std::string> all_scopes(const Graph& g) {
  std::set<std::string> out;
  for (const Node& n : g.nodes()) out.insert(n.loc.scopes.begin(), n.loc.scopes.end());
  return out;
}

}  // namespace

TEST_CASE("every node of the Transformer's graphs has a scope, and the scopes are the params' prefixes") {
  const TransformerConfig cfg = test::tiny_config(24, 0.1);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  const Graph train = build_train_graph(cfg, 2, 5, 6, adam);
  CHECK(unscoped(train) == 0);
  CHECK(unscoped(build_loss_graph(cfg, 2, 5, 6, false)) == 0);
  CHECK(unscoped(build_encoder_graph(cfg, 2, 5)) == 0);
  CHECK(unscoped(build_decoder_graph(cfg, 2, 5, 6)) == 0);
  CHECK(unscoped(build_decoder_step_graph(cfg, 2, 5, 6)) == 0);

  const std::set<std::string> scopes = all_scopes(train);
  for (const char* s : {"enc.mask", "enc.embed", "enc.0.self_attn", "enc.0.ln1", "enc.0.ffn", "enc.0.ln2", "dec.mask",
                        "dec.embed", "dec.0.self_attn", "dec.0.cross_attn", "dec.0.ffn", "dec.0.ln3", "loss",
                        "optimizer", "enc.0.ffn (backward)", "dec.0.cross_attn (backward)", "loss (backward)"})
    CHECK_MESSAGE(scopes.count(s), s);
  // Every scope is a forward part, its backward, or the optimizer: nothing else leaks in.
  for (const std::string& s : scopes) {
    const std::string part(forward_scope(s));
    CHECK_MESSAGE((part == "loss" || part == "optimizer" || part.rfind("enc.", 0) == 0 || part.rfind("dec.", 0) == 0),
                  s);
  }
  CHECK(scopes_of(train, "loss") == std::vector<std::string>{"loss"});
  CHECK(scopes_of(train, "enc.0.ffn.w1.grad") == std::vector<std::string>{"enc.0.ffn (backward)"});
}

TEST_CASE("the default pipeline keeps every scope through each pass, and the program names every call") {
  const TransformerConfig cfg = test::tiny_config(24, 0.1);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  Graph g = build_train_graph(cfg, 2, 5, 6, adam);
  for (const std::string& pass : compiler::PassRegistry::global().default_pipeline()) {
    compiler::PassOptions one;
    one.passes = {pass};
    one.verify_each = true;
    g = compiler::run_passes(g, one);
    CAPTURE(pass);
    CHECK(unscoped(g) == 0);
  }
  size_t flash = 0, fusions_of_several = 0;
  for (const Node& n : g.nodes()) {
    // A rewrite's result inherits what it replaced, and no more: one attention, one scope.
    if (n.op() == "flash_attention") {
      ++flash;
      CHECK(n.loc.scopes.size() == 1);
      CHECK(n.loc.scopes.front().find("attn") != std::string::npos);
    }
    if (n.body) {
      Location body;  // the body's computing nodes' (constants are copied into every kernel that reads them)
      for (const Node& inner : n.body->nodes())
        if (!inner.operands.empty()) body.merge(inner.loc);
      CHECK(n.loc.scopes == body.scopes);
      fusions_of_several += n.loc.scopes.size() > 1;
    }
  }
  CHECK(flash == 6);  // tiny: two layers a side, one attention an encoder layer, two a decoder layer
  CHECK(fusions_of_several > 0);
  const compiler::Program p = compiler::build_program(g);
  for (const compiler::KernelCall& call : p.calls) CHECK(!call.loc.scopes.empty());
  const std::string text = compiler::print_program(p);
  CHECK(text.find("# enc.0.ffn") != std::string::npos);
  CHECK(text.find("(backward)") != std::string::npos);
  // Printed and parsed back, the fused graph keeps them all.
  CHECK(print_kir(parse_kir(print_kir(g), "fused.kir")) == print_kir(g));
}
