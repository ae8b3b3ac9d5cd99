// Node locations: Builder scopes, their .kir form loc(...), and the helpers
// reports use to name and group them.
#include <doctest/doctest.h>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"

using namespace kiln;

namespace {

const std::vector<std::string>& scopes_of(const Graph& g, Value v) { return g.producer(v).loc.scopes; }

}  // namespace

TEST_CASE("Builder scopes nest as dotted paths, close when they end, and keep a backward mark") {
  Graph g("g");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {4}});
  const Value outside = b.emit1("neg", {x});
  Value inner, after, in_backward;
  {
    const Builder::Scope enc(b, "enc");
    {
      const Builder::Scope layer(b, "0.ffn");
      inner = b.emit1("relu", {x});
    }
    after = b.emit1("exp", {x});
  }
  b.set_location(backward_of(Location{{"enc.0"}, {}}));
  {
    const Builder::Scope ffn(b, "ffn");
    in_backward = b.emit1("neg", {x});
  }
  CHECK(scopes_of(g, outside).empty());
  CHECK(scopes_of(g, inner) == std::vector<std::string>{"enc.0.ffn"});
  CHECK(scopes_of(g, after) == std::vector<std::string>{"enc"});
  CHECK(scopes_of(g, in_backward) == std::vector<std::string>{"enc.0.ffn (backward)"});
  CHECK_THROWS_WITH_AS(Builder::Scope(b, "a b"), doctest::Contains("invalid scope name 'a b'"), Error);
  CHECK_THROWS_AS(Builder::Scope(b, ""), Error);
}

TEST_CASE("a fusion built from a body has all of its nodes' scopes") {
  Graph body("f");
  Builder bb(body);
  const Value p = bb.input("p0", {DType::f32, {4}});
  bb.set_location({{"enc.0.ffn"}, {}});
  const Value r = bb.emit1("relu", {p});
  bb.set_location({{"enc.0.ln2"}, {}});
  body.add_output(bb.emit1("neg", {r}));
  Graph g("g");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {4}});
  const std::vector<Value> f =
      b.emit_fusion(std::make_shared<const Graph>(std::move(body)), {x}, {{"kind", std::string("loop")}});
  CHECK(scopes_of(g, f[0]) == std::vector<std::string>{"enc.0.ffn", "enc.0.ln2"});
  // A constant in a body (CSE shares them across the model) names no part of the kernel.
  Graph with_constant("c");
  Builder bc(with_constant);
  const Value q = bc.input("p0", {DType::f32, {4}});
  bc.set_location({{"enc.1.ffn (backward)", "dec.mask"}, {}});
  const Value zero = bc.emit1("fill", {}, {{"shape", Shape{}}, {"value", 0.0}});
  bc.set_location({{"enc.mask"}, {}});
  with_constant.add_output(bc.emit1("maximum", {q, zero}));
  const std::vector<Value> m =
      b.emit_fusion(std::make_shared<const Graph>(std::move(with_constant)), {x}, {{"kind", std::string("loop")}});
  CHECK(scopes_of(g, m[0]) == std::vector<std::string>{"enc.mask"});
  CHECK(b.location().scopes.empty());  // the builder's own location is unchanged
}

TEST_CASE("loc(...) prints after the types, parses back exactly, and stays out of a kernel's text") {
  const std::string text = R"kir(graph @g {
  input %x : f32[2,4]
  %y = neg(%x) : f32[2,4] loc("enc.0.ffn")
  %z = fusion(%y) : f32[2,4] loc("dec.1.ln3 (backward)", "optimizer") graph @f_z {
    input %p0 : f32[2,4]
    %a = exp(%p0) : f32[2,4] loc("optimizer")
    %z = relu(%a) : f32[2,4] loc("dec.1.ln3 (backward)")
    output %z
  }
  %w = tanh(%z) : f32[2,4]
  output %w
}
)kir";
  const Graph g = parse_kir(text, "loc.kir");
  CHECK(print_kir(g) == text);
  CHECK(g.nodes()[0].loc.source.str() == "loc.kir:3:8");
  CHECK(g.nodes()[2].loc.scopes.empty());
  CHECK(g.nodes()[2].loc.source.line == 10);
  const std::string bare = print_kir(g, {.locations = false});
  CHECK(bare.find("loc(") == std::string::npos);
  CHECK(print_kir(parse_kir(bare, "bare.kir")) == bare);
  // Unsorted or repeated scopes are read as the sorted set.
  const Graph messy = parse_kir("graph @m {\n  input %x : f32[2]\n  %y = neg(%x) loc(\"b\", \"a\", \"b\")\n  output %y\n}\n", "messy.kir");
  CHECK(messy.nodes()[0].loc.scopes == std::vector<std::string>{"a", "b"});
}

TEST_CASE("reports name a node by its scopes, else its .kir position") {
  CHECK(describe(Location{{"a.b", "c"}, {"x.kir", 3, 5}}) == "a.b, c");
  CHECK(describe(Location{{}, {"x.kir", 3, 5}}) == "x.kir:3:5");
  CHECK(describe(Location{}).empty());
  CHECK(origin_phrase(Location{{"a.b"}, {"x.kir", 3, 5}}) == "in a.b, at x.kir:3:5");
  CHECK(origin_phrase(Location{{}, {"x.kir", 3, 5}}) == "at x.kir:3:5");
  Graph g("g");
  Builder b(g);
  b.set_location({{"enc.0.ffn"}, {}});
  const Value y = b.emit1("neg", {b.input("x", {DType::f32, {2}})}, {}, "y");
  CHECK(node_label(g, g.producer(y)) == "%y (neg in enc.0.ffn)");
}

TEST_CASE("scope helpers: merge, backward, common prefix by whole parts, prefix by depth") {
  Location a{{"enc.0.ffn"}, {}};
  a.merge(Location{{"enc.0.ln2", "enc.0.ffn"}, {"f.kir", 1, 2}});
  CHECK(a.scopes == std::vector<std::string>{"enc.0.ffn", "enc.0.ln2"});
  CHECK(a.source.str() == "f.kir:1:2");
  CHECK(backward_of(a).scopes == std::vector<std::string>{"enc.0.ffn (backward)", "enc.0.ln2 (backward)"});
  CHECK(backward_scope("x (backward)") == "x (backward)");
  CHECK(forward_scope("x.y (backward)") == "x.y");
  CHECK(common_scope({"enc.0.ffn", "enc.0.ln2"}) == "enc.0");
  CHECK(common_scope({"enc.1.ffn", "enc.10.ffn"}) == "enc");
  CHECK(common_scope({"enc.0.ffn (backward)", "enc.0.ln2 (backward)"}) == "enc.0 (backward)");
  CHECK(common_scope({"enc.0.ffn (backward)", "enc.0.ffn"}) == "enc.0.ffn");
  CHECK(common_scope({"enc.0", "optimizer"}).empty());
  CHECK(common_scope({}).empty());
  CHECK(scope_prefix("enc.0.ffn (backward)", 2) == "enc.0 (backward)");
  CHECK(scope_prefix("enc.0.ffn", 1) == "enc");
  CHECK(scope_prefix("enc.0.ffn", 5) == "enc.0.ffn");
  CHECK(scope_prefix("enc.0.ffn", 0) == "enc.0.ffn");
}
