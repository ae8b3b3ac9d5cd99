// flash-attention: softmax(q k^T * scale + mask) v written out becomes one
// flash_attention that computes the same (on the interpreter, and compiled
// against the interpreter's run of the graph as written); a chain whose values
// something else reads stays, with a remark saying why.
#include <doctest/doctest.h>

#include <optional>
#include <sstream>

#include "compiler/passes/passes.h"
#include "engine/ir/builder.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// How a test writes its attention out.
struct Written {
  Shape q, k, v;
  std::optional<Shape> mask;  // none: no mask
  std::string scale = "mul";  // mul (scores * c), mul_left (c * scores), div (scores / c), none
  bool mask_left = false;     // add(mask, scores)
};

Graph attention_graph(const Written& w) {
  Graph g("attn");
  Builder b(g);
  const Value q = b.input("q", {DType::f32, w.q}), k = b.input("k", {DType::f32, w.k}),
              v = b.input("v", {DType::f32, w.v});
  Value x = b.emit1("matmul", {q, k}, {{"transpose_b", true}}, "scores");
  if (w.scale != "none") {
    const Value c = b.emit1("fill", {}, {{"shape", std::vector<int64_t>{}}, {"value", w.scale == "div" ? 2.5 : 0.4}});
    x = w.scale == "div"        ? b.emit1("div", {x, c}, {}, "scaled")
        : w.scale == "mul_left" ? b.emit1("mul", {c, x}, {}, "scaled")
                                : b.emit1("mul", {x, c}, {}, "scaled");
  }
  if (w.mask) {
    const Value mask = b.input("mask", {DType::f32, *w.mask});
    x = b.emit1("add", w.mask_left ? std::vector<Value>{mask, x} : std::vector<Value>{x, mask}, {}, "masked");
  }
  const Value p = b.emit1("softmax", {x}, {}, "weights");
  g.add_output(b.emit1("matmul", {p, v}, {}, "o"));
  return g;
}

}  // namespace

TEST_CASE("attention written out becomes one flash_attention and computes the same, compiled or not") {
  const Written cases[] = {
      {{2, 3, 5, 4}, {2, 3, 7, 4}, {2, 3, 7, 6}, Shape{5, 7}},                 // a [T,S] mask, T != S, d != dv
      {{2, 4, 4}, {2, 4, 4}, {2, 4, 4}, Shape{2, 1, 4}, "mul_left", true},     // a padding mask, on the left
      {{3, 6, 8}, {3, 9, 8}, {3, 9, 8}, std::nullopt, "div"},                  // no mask, scaled by division
      {{1, 2, 3, 8, 4}, {1, 2, 3, 8, 4}, {1, 2, 3, 8, 5}, Shape{8, 8}, "none"},  // no scale, rank 5
  };
  Rng rng(7);
  for (const Written& w : cases) {
    const Graph g = attention_graph(w);
    CAPTURE(print_kir(g));
    std::ostringstream remarks;
    const Graph out = compiler::rewrite_flash_attention(g, &remarks);
    CHECK(count_op(out, "flash_attention") == 1);
    CHECK(count_op(compiler::dce(out), "softmax") == 0);
    CHECK(remarks.str().find("flash-attention: %o = flash_attention(%q, %k, %v, ") == 0);
    const std::map<std::string, Tensor> bindings = random_bindings(g, rng, Values::moderate);
    CHECK(compare_observed(run_interpreter(g, bindings), run_interpreter(out, bindings), 1e-5, 1e-6) == "");
    // The default pipeline rewrites it too; the compiled kernel against the graph as written.
    check_jit_matches_interpreter(g, bindings, {1e-5, 1e-4, 0});
  }
}

TEST_CASE("an attention whose values something else reads stays as written, with the reason") {
  const auto remark_of = [](const Graph& g) {
    std::ostringstream remarks;
    const Graph out = compiler::rewrite_flash_attention(g, &remarks);
    CHECK(count_op(out, "flash_attention") == 0);
    return remarks.str();
  };
  const Written plain{{2, 4, 4}, {2, 4, 4}, {2, 4, 4}, Shape{4, 4}};
  // The weights are an output too (as a training graph's backward reads them).
  Graph g = attention_graph(plain);
  g.add_output(*g.find("weights"));
  CHECK(remark_of(g) == "flash-attention: %o (softmax weights times %v) stays as written: %weights is read elsewhere "
                        "too\n");
  g = attention_graph(plain);
  g.add_output(*g.find("scores"));
  CHECK(remark_of(g).find("%scores is read elsewhere too") != std::string::npos);
  // A mask that widens the scores: add broadcasts [4,4] with [3,1,1,1].
  CHECK(remark_of(attention_graph({{2, 4, 4}, {2, 4, 4}, {3, 2, 4, 4}, Shape{3, 1, 1, 1}}))
            .find("the mask or scale broadcasts the scores to another shape") != std::string::npos);
  // q, k and v that differ in their batch dims (matmul broadcasts them; flash_attention does not).
  CHECK(remark_of(attention_graph({{2, 4, 4}, {1, 4, 4}, {2, 4, 4}, Shape{4, 4}}))
            .find("q, k and v differ in their batch dims") != std::string::npos);
  // A softmax over another axis.
  const Graph other_axis = parse_kir(R"(graph @g {
  input %q : f32[4,4]
  input %k : f32[4,4]
  input %v : f32[4,4]
  %s = matmul(%q, %k) {transpose_b=true} : f32[4,4]
  %p = softmax(%s) {axis=0} : f32[4,4]
  %o = matmul(%p, %v) : f32[4,4]
  output %o
})",
                                     "g.kir");
  CHECK(remark_of(other_axis).find("the softmax is not over the last axis") != std::string::npos);
}

namespace {

// x [B, T, H*c] -> [B, H, T, c], as a model splits its projections into heads.
Value split_heads(Builder& b, Value x, int64_t heads) {
  const Shape& s = b.type(x).shape;
  const Value y = b.emit1("reshape", {x}, {{"shape", std::vector<int64_t>{s[0], s[1], heads, s[2] / heads}}});
  return b.emit1("transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
}

// Cross-attention of T = 5 queries over S = 7 keys in 3 heads of d = 4, dv = 2;
// with `merge`, the heads merged back into [B, T, 3*2].
Graph multi_head_graph(bool merge) {
  Graph g("mha");
  Builder b(g);
  const Value q = b.input("q", {DType::f32, {2, 5, 12}}), k = b.input("k", {DType::f32, {2, 7, 12}}),
              v = b.input("v", {DType::f32, {2, 7, 6}}), mask = b.input("mask", {DType::f32, {2, 1, 1, 7}});
  const Value s = b.emit1("matmul", {split_heads(b, q, 3), split_heads(b, k, 3)}, {{"transpose_b", true}});
  const Value c = b.emit1("fill", {}, {{"shape", std::vector<int64_t>{}}, {"value", 0.5}});
  const Value p = b.emit1("softmax", {b.emit1("add", {b.emit1("mul", {s, c}), mask})});
  Value o = b.emit1("matmul", {p, split_heads(b, v, 3)}, {}, "o");
  if (merge) {
    o = b.emit1("transpose", {o}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    o = b.emit1("reshape", {o}, {{"shape", std::vector<int64_t>{2, 5, 6}}}, "merged");
  }
  g.add_output(o);
  return g;
}

const Node& only(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes())
    if (n.op() == op) return n;
  FAIL("no " << op);
  return g.nodes().front();
}

}  // namespace

TEST_CASE("a head split before the attention and the merge after it fold into flash_attention's packed layout") {
  Rng rng(11);
  for (const bool merge : {true, false}) {
    CAPTURE(merge);
    const Graph g = multi_head_graph(merge);
    std::ostringstream remarks;
    const Graph out = compiler::dce(compiler::rewrite_flash_attention(g, &remarks));
    CAPTURE(remarks.str());
    // Folded only when all of it is there: without the merge the result stays per head.
    const Node& flash = only(out, "flash_attention");
    CHECK(flash.attrs.get_int("heads") == (merge ? 3 : 0));
    CHECK(count_op(out, "transpose") == (merge ? 0 : 3));
    CHECK(count_op(out, "reshape") == (merge ? 0 : 3));
    if (merge) CHECK(out.name_of(flash.operands[0]) == "q");
    const std::map<std::string, Tensor> bindings = random_bindings(g, rng, Values::moderate);
    CHECK(compare_observed(run_interpreter(g, bindings), run_interpreter(out, bindings), 1e-5, 1e-6) == "");
    check_jit_matches_interpreter(g, bindings, {1e-5, 1e-4, 0});
  }
}

TEST_CASE("attention as PyTorch exports it, q scaled before the product and k^T read as stored, is taken too") {
  // nn.MultiheadAttention at opsets 13-17: [S, B*H, d] rows, q / sqrt(d), and
  // k^T = transpose(k) {perm=[1,2,0]}; the mask added after the product.
  const Graph g = parse_kir(R"(graph @mha {
  input %q : f32[5,4,8]
  input %k : f32[6,4,8]
  input %v : f32[6,4,8]
  input %mask : f32[5,6]
  %qh = transpose(%q) {perm=[1,0,2]} : f32[4,5,8]
  %vh = transpose(%v) {perm=[1,0,2]} : f32[4,6,8]
  %c = fill() {shape=[], value=2.8284270763397217} : f32[]
  %qs = div(%qh, %c) : f32[4,5,8]
  %kt = transpose(%k) {perm=[1,2,0]} : f32[4,8,6]
  %s = matmul(%qs, %kt) : f32[4,5,6]
  %m = add(%s, %mask) : f32[4,5,6]
  %p = softmax(%m) {axis=2} : f32[4,5,6]
  %o = matmul(%p, %vh) : f32[4,5,8]
  output %o
})",
                            "mha.kir");
  std::ostringstream remarks;
  const Graph out = compiler::dce(compiler::rewrite_flash_attention(g, &remarks));
  CAPTURE(remarks.str());
  REQUIRE(count_op(out, "flash_attention") == 1);
  CHECK(count_op(out, "softmax") == 0);
  CHECK(remarks.str().find("flash-attention: %o = flash_attention(%qh, %k, %vh, %mask) {scale=0.353553") == 0);
  Rng rng(3);
  const std::map<std::string, Tensor> bindings = random_bindings(g, rng, Values::moderate);
  CHECK(compare_observed(run_interpreter(g, bindings), run_interpreter(out, bindings), 1e-5, 1e-6) == "");
  check_jit_matches_interpreter(g, bindings, {1e-5, 1e-4, 0});
}
