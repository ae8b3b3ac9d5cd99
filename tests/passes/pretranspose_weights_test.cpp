// pretranspose-weights: a product of few rows by a param the graph never
// assigns reads the param transposed (a run-invariant transpose) through
// transpose_b, and computes the same; products it leaves as written say why.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "compiler/gemm_shapes.h"
#include "compiler/passes/passes.h"
#include "jit/differential.h"
#include "passes/kir_graph.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

struct Rewritten {
  std::string nodes;    // node_lines of the result
  std::string remarks;  // the pass's remarks
};

Rewritten pretranspose(const Graph& g) {
  std::ostringstream remarks;
  const Graph out = compiler::pretranspose_weights(g, &remarks);
  return {node_lines(out), remarks.str()};
}

}  // namespace

TEST_CASE("a product of few rows by a param reads it transposed once, through transpose_b") {
  const Graph g =
      kir("  input %x : f32[4,8]\n"
          "  param %w : f32[8,6]\n"
          "  %y = matmul(%x, %w) : f32[4,6]\n"
          "  output %y\n");
  const Rewritten r = pretranspose(g);
  CHECK(r.nodes ==
        "w.t = transpose(%w) {perm=[1,0]} : f32[6,8]\n"
        "y = matmul(%x, %w.t) {transpose_b=true} : f32[4,6]\n");
  CHECK(r.remarks ==
        "pretranspose-weights: %y = matmul(%x, %w.t) {transpose_b}: 4 rows by %w read in place by the few-rows "
        "GEMM, transposed once per binding of %w\n");
  // In the default pipeline too: after transpose-folding, which would fold it back.
  const Graph optimized = after(g, {});
  CHECK(count_op(optimized, "transpose") == 1);
  Rng rng(3);
  const auto bindings = random_bindings(g, rng, Values::moderate);
  CHECK(compare_observed(run_interpreter(g, bindings), run_interpreter(after(g, {"pretranspose-weights"}), bindings),
                         1e-6, 1e-6) == "");
  check_jit_matches_interpreter(g, bindings, {1e-5, 1e-5});
}

TEST_CASE("one transpose serves every product by a weight; batch rows count as rows; a reshaped param is a weight") {
  // 2 x 16 = 32 rows: at the limit. %v is a param read through a reshape.
  const Graph g =
      kir("  input %x : f32[2,16,8]\n"
          "  input %h : f32[3,8]\n"
          "  param %w : f32[8,6]\n"
          "  param %v : f32[48]\n"
          "  %a = matmul(%x, %w) : f32[2,16,6]\n"
          "  %b = matmul(%h, %w) : f32[3,6]\n"
          "  %v2 = reshape(%v) {shape=[8,6]} : f32[8,6]\n"
          "  %c = matmul(%h, %v2) : f32[3,6]\n"
          "  output %a\n"
          "  output %b\n"
          "  output %c\n");
  static_assert(compiler::kGemmRowsMaxM == 32, "the rows above are at the limit");
  const Rewritten r = pretranspose(g);
  CHECK(r.nodes ==
        "w.t = transpose(%w) {perm=[1,0]} : f32[6,8]\n"
        "a = matmul(%x, %w.t) {transpose_b=true} : f32[2,16,6]\n"
        "b = matmul(%h, %w.t) {transpose_b=true} : f32[3,6]\n"
        "v2 = reshape(%v) {shape=[8,6]} : f32[8,6]\n"
        "v2.t = transpose(%v2) {perm=[1,0]} : f32[6,8]\n"
        "c = matmul(%h, %v2.t) {transpose_b=true} : f32[3,6]\n");
  CHECK(r.remarks.find("%c = matmul(%h, %v2.t) {transpose_b}: 3 rows by %v2 read in place by the few-rows GEMM, "
                       "transposed once per binding of %v\n") != std::string::npos);
  Rng rng(5);
  const auto bindings = random_bindings(g, rng, Values::moderate);
  check_jit_matches_interpreter(g, bindings, {1e-5, 1e-5});
}

TEST_CASE("products the pass leaves as written: an assigned param, many rows, an input, flags already set") {
  const auto stays = [](const std::string& body) {
    const Graph g = kir(body);
    const Rewritten r = pretranspose(g);
    CHECK(r.nodes == node_lines(g));
    return r.remarks;
  };
  // A training step assigns the param: its transpose would run at every step.
  CHECK(stays("  input %x : f32[4,8]\n"
              "  param %w : f32[8,6]\n"
              "  %y = matmul(%x, %w) : f32[4,6]\n"
              "  %w2 = mul(%w, %w) : f32[8,6]\n"
              "  assign(%w, %w2)\n"
              "  output %y\n") ==
        "pretranspose-weights: %y (%x times %w) stays as written: %w is assigned by the graph, so a transpose of "
        "it would run at every step\n");
  // 33 rows, and 3 x 11 = 33 rows of a batched operand.
  for (const std::string x : {"f32[33,8]", "f32[3,11,8]"}) {
    CAPTURE(x);
    const std::string y = x == "f32[33,8]" ? "f32[33,6]" : "f32[3,11,6]";
    CHECK(stays("  input %x : " + x + "\n  param %w : f32[8,6]\n  %y = matmul(%x, %w) : " + y + "\n  output %y\n") ==
          "pretranspose-weights: %y (%x times %w) stays as written: 33 rows, more than the few-rows GEMM's 32 (the "
          "packed GEMM reuses each packed panel across them)\n");
  }
  // A weight fed at each run (an input) is no param: nothing to remark.
  CHECK(stays("  input %x : f32[4,8]\n"
              "  input %w : f32[8,6]\n"
              "  %y = matmul(%x, %w) : f32[4,6]\n"
              "  output %y\n") == "");
  // A transposed left operand.
  CHECK(stays("  input %x : f32[8,4]\n"
              "  param %w : f32[8,6]\n"
              "  %y = matmul(%x, %w) {transpose_a=true} : f32[4,6]\n"
              "  output %y\n") ==
        "pretranspose-weights: %y (%x times %w) stays as written: %x is read transposed (transpose_a); the "
        "few-rows GEMM reads it row by row\n");
  // A weight already stored n x k (tied embeddings' logits): already read in place.
  CHECK(stays("  input %x : f32[4,8]\n"
              "  param %w : f32[6,8]\n"
              "  %y = matmul(%x, %w) {transpose_b=true} : f32[4,6]\n"
              "  output %y\n") == "");
}

TEST_CASE("pretranspose-weights is in the default pipeline after transpose-folding and before fusion") {
  const std::vector<std::string>& pipeline = compiler::PassRegistry::global().default_pipeline();
  const auto at = [&](const std::string& name) { return std::find(pipeline.begin(), pipeline.end(), name); };
  REQUIRE(at("pretranspose-weights") != pipeline.end());
  CHECK(at("transpose-folding") < at("pretranspose-weights"));
  CHECK(at("pretranspose-weights") < at("fusion"));
}
