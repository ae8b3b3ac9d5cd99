// bf16-saves (--precision bf16, after bf16-matmuls): what a backward keeps of
// attention (q, k, v, o) and of a layer norm (its input) is stored in bf16;
// an inference graph, which keeps nothing, is left alone. (What it saves on a
// whole training step: tests/models/transformer_jit_test.cpp.)
#include <doctest/doctest.h>

#include <sstream>

#include "compiler/passes/passes.h"
#include "compiler/pipeline.h"
#include "passes/kir_graph.h"
#include "text_and_files.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// Attention over q, k, v, a layer norm of its output, and both backwards as
// autodiff writes them (the layer norm's recomputes x_hat from x and mean).
const char* const kAttentionAndNorm =
    "  input %q : f32[2,4,8]\n"
    "  input %k : f32[2,5,8]\n"
    "  input %v : f32[2,5,8]\n"
    "  input %mask : f32[2,1,5]\n"
    "  input %dy : f32[2,4,8]\n"
    "  param %gamma : f32[8]\n"
    "  param %beta : f32[8]\n"
    "  %o, %lse = flash_attention(%q, %k, %v, %mask) {scale=0.35} : f32[2,4,8], f32[2,4]\n"
    "  %x = add(%o, %q) : f32[2,4,8]\n"
    "  %y, %mean, %rstd = layer_norm(%x, %gamma, %beta) : f32[2,4,8], f32[2,4], f32[2,4]\n"
    "  %m = reshape(%mean) {shape=[2,4,1]} : f32[2,4,1]\n"
    "  %r = reshape(%rstd) {shape=[2,4,1]} : f32[2,4,1]\n"
    "  %centered = sub(%x, %m) : f32[2,4,8]\n"
    "  %xhat = mul(%centered, %r) : f32[2,4,8]\n"
    "  %shifted = sub(%x, %q) : f32[2,4,8]\n"
    "  %dq, %dk, %dv = flash_attention_backward(%q, %k, %v, %mask, %o, %lse, %xhat) {scale=0.35} : "
    "f32[2,4,8], f32[2,5,8], f32[2,5,8]\n"
    "  output %y\n"
    "  output %dq\n"
    "  output %dk\n"
    "  output %dv\n"
    "  output %shifted\n";

}  // namespace

TEST_CASE("bf16-saves: attention reads q, k, v in bf16 and its backward the same copies and o's; a layer norm's "
          "backward recomputes x_hat from x's bf16 copy") {
  const Graph g = kir(kAttentionAndNorm);
  std::ostringstream remarks;
  const Graph out = compiler::bf16_saves(g, &remarks);
  const std::string lines = node_lines(out);
  CHECK(contains(lines,
                 "q.bf16 = cast(%q) {dtype=bf16} : bf16[2,4,8]\n"
                 "k.bf16 = cast(%k) {dtype=bf16} : bf16[2,5,8]\n"
                 "v.bf16 = cast(%v) {dtype=bf16} : bf16[2,5,8]\n"
                 "o, %lse = flash_attention(%q.bf16, %k.bf16, %v.bf16, %mask) {scale=0.35} : f32[2,4,8], f32[2,4]\n"
                 "o.bf16 = cast(%o) {dtype=bf16} : bf16[2,4,8]\n"));
  CHECK(contains(lines, "x.bf16 = cast(%x) {dtype=bf16} : bf16[2,4,8]\n"));
  CHECK(contains(lines, "x.widened = cast(%x.bf16) {dtype=f32} : f32[2,4,8]\ncentered = sub(%x.widened, %m)"));
  CHECK(contains(lines, "y, %mean, %rstd = layer_norm(%x, %gamma, %beta)"));  // the forward normalizes the f32 x
  CHECK(contains(lines, "shifted = sub(%x, %q)"));                         // not x - mean: left alone
  CHECK(contains(lines, "= flash_attention_backward(%q.bf16, %k.bf16, %v.bf16, %mask, %o.bf16, %lse, %xhat)"));
  CHECK(remarks.str() ==
        "bf16-saves: %o = flash_attention(%q, %k, %v): q, k, v in bf16, and o kept for the backward in bf16\n"
        "bf16-saves: %centered = sub(%x, mean) reads the layer norm input's bf16 copy\n");
  // Through the pass manager: verified, invariants kept.
  CHECK(print_kir(after(g, {"bf16-saves"})) == print_kir(out));
}

TEST_CASE("bf16-saves leaves an attention with no backward (inference) and a layer norm with none alone") {
  const Graph g = kir(
      "  input %q : f32[2,4,8]\n"
      "  input %k : f32[2,5,8]\n"
      "  input %v : f32[2,5,8]\n"
      "  input %mask : f32[2,1,5]\n"
      "  param %gamma : f32[8]\n"
      "  param %beta : f32[8]\n"
      "  %o, %lse = flash_attention(%q, %k, %v, %mask) {scale=0.35} : f32[2,4,8], f32[2,4]\n"
      "  %y, %mean, %rstd = layer_norm(%o, %gamma, %beta) : f32[2,4,8], f32[2,4], f32[2,4]\n"
      "  output %y\n");
  std::ostringstream remarks;
  CHECK(print_kir(compiler::bf16_saves(g, &remarks)) == print_kir(g));
  CHECK(remarks.str().empty());
}
