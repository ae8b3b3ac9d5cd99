// The fusion-biased generator (ir/fusion_graph.h): its graphs verify, print and
// read back to the same text, depend only on the seed, and over a few dozen
// seeds contain every motif it promises.
#include <doctest/doctest.h>

#include <limits>
#include <set>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "ir/fusion_graph.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("fusion-biased random graphs verify, round-trip through .kir and depend only on the seed") {
  std::set<std::string> texts;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const Graph g = fusion_graph(seed);
    const std::string text = print_kir(g);
    INFO(text);
    CHECK(verify_problems(g).empty());
    CHECK(print_kir(parse_kir(text, "fusion.kir")) == text);
    CHECK(print_kir(fusion_graph(seed)) == text);
    texts.insert(text);
  }
  CHECK(texts.size() == 60);
}

TEST_CASE("fusion-biased random graphs hold every motif") {
  std::set<std::string> seen;
  for (uint64_t seed = 0; seed < 100; ++seed) {
    const Graph g = fusion_graph(seed);
    for (const Node& n : g.nodes()) {
      seen.insert(n.op());
      if (n.op() == "fill" && n.attrs.get_float("value") == -std::numeric_limits<double>::infinity())
        seen.insert("-inf mask");
      if (n.op() == "matmul" && n.attrs.get_bool("transpose_b")) seen.insert("k^T by the flag");
    }
    for (Value v : g.declarations())
      if (g.type(v).dtype == DType::i32) seen.insert("i32 input");
    for (Value v : g.outputs())
      if (g.name_of(v).find(".grad") != std::string::npos) seen.insert("gradient output");
  }
  for (const char* motif :
       {"matmul", "softmax", "log_softmax", "layer_norm", "flash_attention", "flash_attention_backward", "causal_mask",
        "-inf mask", "k^T by the flag", "transpose", "reshape", "slice", "sum", "mean", "max", "relu", "assign",
        "select", "cast", "div", "cross_entropy", "i32 input", "gradient output"}) {
    INFO(std::string(motif));
    CHECK(seen.count(motif) == 1);
  }
}
