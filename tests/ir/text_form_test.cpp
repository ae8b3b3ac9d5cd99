// The .kir text form: canonical printing, exact round-trips (handwritten graphs,
// the examples, random graphs), awkward attribute values, and DOT output.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "engine/ir/builder.h"
#include "engine/ir/dot.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "ir/random_graph.h"

using namespace kiln;

namespace {

// Two graphs are the same if names, kinds, types, attributes (compared as text, so
// -0.0 differs from 0.0), operands, results and outputs all agree in order.
void check_same_graph(const Graph& a, const Graph& b) {
  CHECK(a.name() == b.name());
  REQUIRE(a.declarations().size() == b.declarations().size());
  for (size_t i = 0; i < a.declarations().size(); ++i) {
    const ValueInfo& x = a.value(a.declarations()[i]);
    const ValueInfo& y = b.value(b.declarations()[i]);
    CHECK(x.name == y.name);
    CHECK(x.kind == y.kind);
    CHECK(x.type == y.type);
    CHECK(attrs_text(x.attrs) == attrs_text(y.attrs));
  }
  REQUIRE(a.nodes().size() == b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node& x = a.nodes()[i];
    const Node& y = b.nodes()[i];
    CHECK(x.op() == y.op());
    CHECK(x.loc.scopes == y.loc.scopes);
    CHECK(attrs_text(x.attrs) == attrs_text(y.attrs));
    REQUIRE(x.operands.size() == y.operands.size());
    for (size_t k = 0; k < x.operands.size(); ++k) CHECK(a.name_of(x.operands[k]) == b.name_of(y.operands[k]));
    REQUIRE(x.results.size() == y.results.size());
    for (size_t k = 0; k < x.results.size(); ++k) {
      CHECK(a.name_of(x.results[k]) == b.name_of(y.results[k]));
      CHECK(a.type(x.results[k]) == b.type(y.results[k]));
    }
  }
  REQUIRE(a.outputs().size() == b.outputs().size());
  for (size_t i = 0; i < a.outputs().size(); ++i) CHECK(a.name_of(a.outputs()[i]) == b.name_of(b.outputs()[i]));
}

// print -> parse -> print gives the same text and the same graph.
void check_round_trip(const Graph& g) {
  const std::string text = print_kir(g);
  INFO(text);
  const Graph back = parse_kir(text, "round_trip.kir");
  CHECK(print_kir(back) == text);
  check_same_graph(g, back);
}

// The `%a, %b = ...` form is tested with this small op, whose results are easy to
// check by hand: f32[2n] -> two f32[n] halves.
void register_test_halves_op() {
  static const bool done = [] {
    OpRegistry::global().add(OpDef{.name = "test_halves",
                                   .summary = "test only: splits a vector into two halves",
                                   .min_operands = 1,
                                   .max_operands = 1,
                                   .infer = [](const std::vector<TensorType>& in, const Attrs&) {
                                     if (in[0].rank() != 1 || in[0].shape[0] % 2 != 0)
                                       throw Error("needs a vector of even length");
                                     const TensorType half{in[0].dtype, {in[0].shape[0] / 2}};
                                     return std::vector<TensorType>{half, half};
                                   }});
    return true;
  }();
  (void)done;
}

}  // namespace

TEST_CASE("a handwritten graph parses into checked nodes and prints canonically") {
  const std::string text = R"(# one training step of a tiny mlp
graph @mlp {
  input %x : f32[4,3]
  param %w1 : f32[3,2] {init="glorot"}
  %h = matmul(%x, %w1) {transpose_a=false}   # a default: not printed
  param %b1 : f32[2] {init="zeros"}          # declared late: printed with the others
  %a = add(%h, %b1) : f32[4,2]
  %y = relu(%a)
  %s = sum(%y) {keepdims=true, axes=[1]} : f32[4,1]
  %c = fill() {value=1, shape=[2]}
  %w1.new = sub(%w1, %w1)
  assign(%w1, %w1.new)
  output %y
  output %s
}
)";
  const Graph g = parse_kir(text, "mlp.kir");
  CHECK(print_kir(g) == R"(graph @mlp {
  input %x : f32[4,3]
  param %w1 : f32[3,2] {init="glorot"}
  param %b1 : f32[2] {init="zeros"}
  %h = matmul(%x, %w1) : f32[4,2]
  %a = add(%h, %b1) : f32[4,2]
  %y = relu(%a) : f32[4,2]
  %s = sum(%y) {axes=[1], keepdims=true} : f32[4,1]
  %c = fill() {shape=[2], value=1.0} : f32[2]
  %w1.new = sub(%w1, %w1) : f32[3,2]
  assign(%w1, %w1.new)
  output %y
  output %s
}
)");
  REQUIRE(g.nodes().size() == 7);
  const Node& sum = g.nodes()[3];
  CHECK(sum.attrs.get_ints("axes") == std::vector<int64_t>{1});
  CHECK(sum.attrs.get_bool("keepdims"));
  CHECK(g.nodes()[0].attrs.get_bool("transpose_b") == false);  // defaults are filled in
  CHECK(g.nodes()[4].attrs.get_float("value") == 1.0);         // the int literal became a float
  CHECK(g.nodes()[4].attrs.get_dtype("dtype") == DType::f32);
  CHECK(g.nodes()[6].results.empty());
  CHECK(g.value(*g.find("w1")).attrs.get_string("init") == "glorot");
  CHECK(g.type(*g.find("s")) == TensorType{DType::f32, {4, 1}});
  CHECK(verify_problems(g).empty());
  check_round_trip(g);
}

TEST_CASE("type annotations are optional; without them the same graph results") {
  const Graph with = parse_kir(
      "graph @g {\n  input %x : f32[2,3]\n  %t = transpose(%x) {perm=[1,0]} : f32[3,2]\n  output %t\n}\n", "a.kir");
  const Graph without =
      parse_kir("graph @g { input %x : f32[2,3] %t = transpose(%x) {perm=[1,0]} output %t }", "b.kir");
  CHECK(print_kir(with) == print_kir(without));
  CHECK(without.type(*without.find("t")) == TensorType{DType::f32, {3, 2}});
}

TEST_CASE("a graph built with the Builder round-trips with its types and attributes") {
  Graph g("built");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 1, 3}});
  const Value w = b.param("w.0", {DType::f32, {3, 4}}, {{"init", std::string("normal")}, {"std", 0.02}});
  const Value step = b.state("step", {DType::i32, {}});
  const Value h = b.emit1("matmul", {x, w}, {{"transpose_b", false}}, "h");
  const Value m = b.emit1("max", {h}, {{"axes", std::vector<int64_t>{-1, 0}}, {"keepdims", true}}, "m");
  const Value e = b.emit1("exp", {b.emit1("sub", {h, m})});
  const Value s = b.emit1("softmax", {e}, {{"axis", int64_t{1}}});
  const Value mask = b.emit1("less", {s, m});
  const Value pick = b.emit1("select", {mask, s, e}, {}, "pick");
  const Value flat = b.emit1("reshape", {pick}, {{"shape", std::vector<int64_t>{-1, 4}}});
  const Value part = b.emit1(
      "slice", {flat},
      {{"axes", std::vector<int64_t>{0}}, {"starts", std::vector<int64_t>{-1}}, {"ends", std::vector<int64_t>{2}}});
  const Value both = b.emit1("concat", {part, flat}, {{"axis", int64_t{0}}});
  const Value one = b.emit1("fill", {}, {{"shape", std::vector<int64_t>{}}, {"dtype", DType::i32}, {"value", 1.0}});
  b.emit("assign", {step, b.emit1("add", {step, one})});
  b.output(both);
  b.output(b.emit1("cast", {mask}, {{"dtype", DType::f32}}));
  check_round_trip(g);
  const std::string text = print_kir(g);
  CHECK(text.find("param %w.0 : f32[3,4] {init=\"normal\", std=0.02}\n") != std::string::npos);
  CHECK(text.find("%m = max(%h) {axes=[-1,0], keepdims=true} : f32[1,1,1]\n") != std::string::npos);
  CHECK(text.find("%h = matmul(%x, %w.0) : f32[2,1,4]\n") != std::string::npos);
  CHECK(text.find("fill() {dtype=i32, shape=[], value=1.0} : i32[]\n") != std::string::npos);
}

TEST_CASE("awkward float attributes survive print and parse bit for bit") {
  const std::vector<double> values = {0.1,     1e-30,   -0.0,          0.0,  5e-324,   1e38,
                                      1.0 / 3, -2.5e-8, 123456789.125, 1e21, INFINITY, -INFINITY, NAN};
  Graph g("floats");
  Builder b(g);
  for (double v : values) b.output(b.emit1("fill", {}, {{"shape", std::vector<int64_t>{1}}, {"value", v}}));
  const std::string text = print_kir(g);
  for (const char* s : {"value=0.1}", "value=1e-30}", "value=-0.0}", "value=5e-324}", "value=1e+38}", "value=inf}",
                        "value=-inf}", "value=1e+21}", "value=123456789.125}", "value=nan}"})
    CHECK_MESSAGE(text.find(s) != std::string::npos, s);
  const Graph back = parse_kir(text, "floats.kir");  // verifies it too: a NaN attribute equals itself
  CHECK(print_kir(back) == text);
  REQUIRE(back.nodes().size() == values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const double got = back.nodes()[i].attrs.get_float("value");
    CHECK(std::memcmp(&got, &values[i], sizeof got) == 0);
  }
}

TEST_CASE("string attributes with quotes, backslashes and newlines round-trip") {
  Graph g("strings");
  const std::string odd = "a \"quoted\" \\path\\\nnext line\t#not a comment";
  g.declare(ValueKind::param, "p", {DType::f32, {2}}, {{"init", std::string("zeros")}, {"note", odd}});
  g.add_output(*g.find("p"));
  const std::string text = print_kir(g);
  CHECK(text.find(R"(note="a \"quoted\" \\path\\\nnext line)") != std::string::npos);
  const Graph back = parse_kir(text, "strings.kir");
  CHECK(back.value(*back.find("p")).attrs.get_string("note") == odd);
  CHECK(print_kir(back) == text);
}

TEST_CASE("nodes with several results name them all, in order") {
  register_test_halves_op();
  const Graph g = parse_kir(
      "graph @split {\n  input %v : f32[6]\n  %lo, %hi = test_halves(%v) : f32[3], f32[3]\n  %s = add(%lo, %hi)\n"
      "  output %s\n}\n",
      "split.kir");
  REQUIRE(g.nodes()[0].results.size() == 2);
  CHECK(g.name_of(g.nodes()[0].results[1]) == "hi");
  CHECK(g.type(*g.find("lo")) == TensorType{DType::f32, {3}});
  CHECK(print_kir(g) ==
        "graph @split {\n  input %v : f32[6]\n  %lo, %hi = test_halves(%v) : f32[3], f32[3]\n"
        "  %s = add(%lo, %hi) : f32[3]\n  output %s\n}\n");
  check_round_trip(g);
}

TEST_CASE("flash_attention's causal attribute prints, parses and round-trips; its default is not printed") {
  const Graph g = parse_kir(R"(graph @causal {
  input %q : f32[2,8,4]
  input %k : f32[2,8,4]
  input %v : f32[2,8,4]
  %m = fill() {shape=[], value=0.0}
  %o, %lse = flash_attention(%q, %k, %v, %m) {scale=0.5, causal=1}
  %p, %p_lse = flash_attention(%q, %k, %v, %m) {scale=0.5}
  output %o
  output %p
}
)",
                            "causal.kir");
  CHECK(g.nodes()[1].attrs.get_int("causal") == 1);
  CHECK(g.nodes()[2].attrs.get_int("causal") == 0);
  const std::string text = print_kir(g);
  CHECK(text.find("%o, %lse = flash_attention(%q, %k, %v, %m) {causal=1, scale=0.5}") != std::string::npos);
  check_round_trip(g);
}

TEST_CASE("every example file round-trips") {
  const std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / "examples";
  std::set<std::string> seen;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".kir") continue;
    INFO(entry.path().string());
    seen.insert(entry.path().filename().string());
    const Graph g = parse_kir_file(entry.path().string());
    CHECK(verify_problems(g).empty());
    CHECK_FALSE(g.nodes().empty());
    check_round_trip(g);
  }
  for (const char* name : {"mlp.kir", "softmax_classifier.kir", "attention.kir"}) CHECK_MESSAGE(seen.count(name), name);
}

TEST_CASE("250 random graphs round-trip") {
  std::set<std::string> ops;
  for (uint64_t seed = 1; seed <= 250; ++seed) {
    INFO("seed " << seed);
    const Graph g = test::random_graph(seed, {.steps = static_cast<int>(4 + seed % 20)});
    CHECK(verify_problems(g).empty());
    check_round_trip(g);
    for (const Node& n : g.nodes()) ops.insert(n.op());
  }
  for (const char* op :
       {"neg",     "exp",         "add",        "div",     "maximum",   "less",      "logical_and", "select", "cast",
        "sum",     "mean",        "max",        "reshape", "transpose", "broadcast", "slice",       "concat", "matmul",
        "softmax", "log_softmax", "layer_norm", "dropout", "fill",      "iota",      "assign"})
    CHECK_MESSAGE(ops.count(op), op);
}

TEST_CASE("the random graph generator is deterministic in its seed") {
  CHECK(print_kir(test::random_graph(42)) == print_kir(test::random_graph(42)));
  CHECK(print_kir(test::random_graph(42)) != print_kir(test::random_graph(43)));
}

TEST_CASE("parse_kir_file names the file it cannot read") {
  CHECK_THROWS_WITH_AS(parse_kir_file("/no/such/dir/x.kir"),
                       "cannot read /no/such/dir/x.kir: No such file or directory", Error);
  CHECK_THROWS_WITH_AS(parse_kir_file(KILN_SOURCE_DIR), doctest::Contains("Is a directory"), Error);
}

TEST_CASE("DOT output has one node per declaration, op and output, and one labelled edge per use") {
  const Graph g = parse_kir(R"(graph @tiny {
  input %x : f32[2,3]
  param %w : f32[3] {init="ones"}
  state %n : f32[]
  %y = mul(%x, %w)
  %s = sum(%y) {axes=[1]}
  %n.next = sum(%s)
  assign(%n, %n.next)
  output %s
})",
                            "tiny.kir");
  const std::string dot = to_dot(g);
  CHECK(dot.rfind("digraph \"tiny\" {\n", 0) == 0);
  for (const char* line : {
           "  v0 [label=\"input %x\\nf32[2,3]\", shape=invhouse",
           "  v1 [label=\"param %w\\nf32[3]\\n{init=\\\"ones\\\"}\", shape=box",
           "  v2 [label=\"state %n\\nf32[]\", shape=cylinder",
           "  n0 [label=\"mul\\nf32[2,3]\", shape=ellipse];\n",
           "  v0 -> n0 [label=\"%x\"];\n",
           "  v1 -> n0 [label=\"%w\"];\n",
           "  n1 [label=\"sum\\n{axes=[1]}\\nf32[2]\", shape=ellipse];\n",
           "  n0 -> n1 [label=\"%y\"];\n",
           "  n2 -> n3 [label=\"%n.next\"];\n",
           "  v2 -> n3 [label=\"%n\"];\n",
           "  n3 [label=\"assign\", shape=octagon",
           "  o0 [label=\"output %s\", shape=house",
           "  n1 -> o0 [label=\"%s\"];\n",
       })
    CHECK_MESSAGE(dot.find(line) != std::string::npos, line);
  CHECK(std::count(dot.begin(), dot.end(), '>') == 7);  // 6 operand uses + 1 output
  CHECK(dot.substr(dot.size() - 2) == "}\n");
}

TEST_CASE("DOT output of an example has an edge for every operand and output") {
  const Graph g = parse_kir_file(std::string(KILN_SOURCE_DIR) + "/examples/mlp.kir");
  const std::string dot = to_dot(g);
  size_t uses = g.outputs().size();
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    uses += n.operands.size();
    std::string head = "  n";
    head += std::to_string(i);
    head += " [label=\"";
    head += n.op();
    CHECK_MESSAGE(dot.find(head) != std::string::npos, head);
  }
  for (Value v : g.declarations()) {
    std::string label = "[label=\"";
    label += value_kind_name(g.value(v).kind);
    label += " %";
    label += g.name_of(v);
    CHECK_MESSAGE(dot.find(label) != std::string::npos, label);
  }
  size_t edges = 0;
  for (size_t at = dot.find(" -> "); at != std::string::npos; at = dot.find(" -> ", at + 1)) ++edges;
  CHECK(edges == uses);
}

TEST_CASE("DOT output draws a fusion as a cluster of its body, wired to the values outside, with a caller's marks") {
  const Graph g = parse_kir(R"(graph @fused {
  input %x : f32[8,16]
  param %w : f32[16,4]
  %y = fusion(%x, %w) {hero=0, kind="epilogue"} : f32[8,4] graph @f_y {
    input %p0 : f32[8,16]
    input %p1 : f32[16,4]
    %m = matmul(%p0, %p1) : f32[8,4]
    %y = relu(%m) : f32[8,4]
    output %y
  }
  %s = sum(%y) : f32[]
  output %s
})",
                            "fused.kir");
  const std::string dot = to_dot(g, {{0, {"1.5 ms (75.0%)", "#ff4040"}}, {1, {"arena @0", "#a6cee3"}}});
  for (const char* line : {
           "  subgraph cluster_n0 {\n  label=\"fusion {hero=0, kind=\\\"epilogue\\\"}\\n1.5 ms (75.0%)\"; "
           "style=\"rounded,filled\"; fillcolor=\"#ff4040\"",
           "  n0_0 [label=\"matmul\\nf32[8,4]\", shape=ellipse",
           "  n0_1 [label=\"relu\\nf32[8,4]\", shape=ellipse",
           "  v0 -> n0_0 [label=\"%x\"];\n",   // the body's inputs stand for the fusion's operands
           "  v1 -> n0_0 [label=\"%w\"];\n",
           "  n0_0 -> n0_1 [label=\"%m\"];\n",  // inside the body
           "  n0_1 -> n1 [label=\"%y\"];\n",    // the fusion's result comes from the body node making it
           "  n1 [label=\"sum\\nf32[]\\narena @0\", shape=ellipse, style=filled, fillcolor=\"#a6cee3\"];\n",
       })
    CHECK_MESSAGE(dot.find(line) != std::string::npos, line);
  CHECK(dot.find("  n0 [") == std::string::npos);  // no node for the fusion itself
}
