// bf16-matmuls (--precision bf16): every f32 matmul reads its operands through
// one bf16 cast per value; --precision bf16 adds the pass after flash-attention
// in the default pipeline, and a --passes list runs just what it names.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>

#include "compiler/passes/passes.h"
#include "compiler/pipeline.h"
#include "passes/kir_graph.h"
#include "text_and_files.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("bf16-matmuls casts each operand value once, whatever reads it, and leaves bf16 products alone") {
  const Graph g = kir(
      "  input %x : f32[4,8]\n"
      "  input %w : f32[8,8]\n"
      "  input %h : bf16[4,8]\n"
      "  %y = matmul(%x, %w) : f32[4,8]\n"
      "  %z = matmul(%y, %w) {transpose_b=true} : f32[4,8]\n"
      "  %dw = matmul(%x, %z) {transpose_a=true} : f32[8,8]\n"
      "  %u = matmul(%h, %h) {transpose_b=true} : f32[4,4]\n"
      "  output %dw\n"
      "  output %u\n");
  std::ostringstream remarks;
  const Graph out = compiler::bf16_matmuls(g, &remarks);
  CHECK(node_lines(out) ==
        "x.bf16 = cast(%x) {dtype=bf16} : bf16[4,8]\n"
        "w.bf16 = cast(%w) {dtype=bf16} : bf16[8,8]\n"
        "y = matmul(%x.bf16, %w.bf16) : f32[4,8]\n"
        "y.bf16 = cast(%y) {dtype=bf16} : bf16[4,8]\n"
        "z = matmul(%y.bf16, %w.bf16) {transpose_b=true} : f32[4,8]\n"
        "z.bf16 = cast(%z) {dtype=bf16} : bf16[4,8]\n"
        "dw = matmul(%x.bf16, %z.bf16) {transpose_a=true} : f32[8,8]\n"
        "u = matmul(%h, %h) {transpose_b=true} : f32[4,4]\n");
  CHECK(remarks.str() ==
        "bf16-matmuls: %y = matmul(%x, %w): operands in bf16, f32 sums\n"
        "bf16-matmuls: %z = matmul(%y, %w): operands in bf16, f32 sums\n"
        "bf16-matmuls: %dw = matmul(%x, %z): operands in bf16, f32 sums\n");
  // Through the pass manager: verified, invariants kept.
  CHECK(print_kir(after(g, {"bf16-matmuls"})) == print_kir(out));
}

TEST_CASE("bf16-matmuls: a sign test against 0 of a value with a bf16 copy reads the copy (ReLU's gradient mask)") {
  const Graph g = kir(
      "  input %x : f32[4,8]\n"
      "  input %w : f32[8,8]\n"
      "  input %dy : f32[4,8]\n"
      "  %h = relu(%x) : f32[4,8]\n"
      "  %y = matmul(%h, %w) : f32[4,8]\n"
      "  %zero = fill() {shape=[]} : f32[]\n"
      "  %half = fill() {shape=[], value=0.5} : f32[]\n"
      "  %mask = greater(%h, %zero) : bool[4,8]\n"
      "  %other = greater(%h, %half) : bool[4,8]\n"
      "  %before = less(%x, %zero) : bool[4,8]\n"
      "  output %y\n"
      "  output %mask\n"
      "  output %other\n"
      "  output %before\n");
  const std::string lines = node_lines(compiler::bf16_matmuls(g));
  CHECK(contains(lines, "h.widened = cast(%h.bf16) {dtype=f32} : f32[4,8]\nmask = greater(%h.widened, %zero)"));
  CHECK(contains(lines, "other = greater(%h, %half)"));  // not a sign test
  CHECK(contains(lines, "before = less(%x, %zero)"));    // %x has no bf16 copy
}

TEST_CASE("--precision bf16 runs bf16-matmuls, then bf16-saves, right after flash-attention; --passes runs what it names") {
  compiler::PassOptions opts;
  const std::vector<std::string> f32 = compiler::pipeline_passes(opts);
  CHECK(std::count(f32.begin(), f32.end(), "bf16-matmuls") == 0);
  opts.precision = DType::bf16;
  const std::vector<std::string> bf16 = compiler::pipeline_passes(opts);
  REQUIRE(bf16.size() == f32.size() + 2);
  const auto flash = std::find(bf16.begin(), bf16.end(), "flash-attention");
  REQUIRE(flash != bf16.end());
  CHECK(*(flash + 1) == "bf16-matmuls");
  CHECK(*(flash + 2) == "bf16-saves");
  opts.passes = {"cse", "dce"};
  CHECK(compiler::pipeline_passes(opts) == opts.passes);
}
