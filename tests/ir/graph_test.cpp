#include <doctest/doctest.h>

#include "check_error.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/fusion_kind.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"

using namespace kiln;

TEST_CASE("broadcast_shapes follows numpy") {
  CHECK(broadcast_shapes({2, 3}, {3}) == Shape{2, 3});
  CHECK(broadcast_shapes({2, 1}, {1, 4}) == Shape{2, 4});
  CHECK(broadcast_shapes({}, {5, 1}) == Shape{5, 1});
  CHECK(broadcast_shapes({1}, {}) == Shape{1});
  CHECK_THROWS_AS(broadcast_shapes({2, 3}, {4}), Error);
}

TEST_CASE("graph names are unique and fresh names avoid collisions") {
  Graph g("t");
  g.declare(ValueKind::input, "x", {DType::f32, {2}});
  CHECK_THROWS_AS(g.declare(ValueKind::param, "x", {DType::f32, {2}}), Error);
  CHECK_THROWS_AS(g.declare(ValueKind::param, "bad name", {DType::f32, {2}}), Error);
  CHECK(g.fresh_name("x") == "x_1");
  CHECK(g.fresh_name() == "0");
}

TEST_CASE("builder rejects unknown ops") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2}});
  CHECK_THROWS_WITH_AS(b.emit1("no_such_op", {x}), "unknown op 'no_such_op'", Error);
  CHECK(verify_problems(g).empty());
}

TEST_CASE("references into the graph survive thousands of later nodes and declarations") {
  Graph g;
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 3}});
  const Value y = b.emit1("exp", {x}, {}, "y");
  const TensorType& x_type = b.type(x);
  const std::string& y_name = g.name_of(y);
  const Node& y_node = g.producer(y);
  for (int i = 0; i < 5000; ++i) {
    b.emit1("exp", {y});
    b.state("s_" + std::to_string(i), {DType::i32, {i % 7}});
  }
  CHECK(x_type == TensorType{DType::f32, {2, 3}});
  CHECK(y_name == "y");
  CHECK(y_node.op() == "exp");
  CHECK(y_node.results == std::vector<Value>{y});
  CHECK(&g.nodes().front() == &y_node);
}

TEST_CASE("a graph holds only names and strings that print as .kir and parse back") {
  check_error([] { Graph bad("a b"); }, {"invalid graph name 'a b'"});
  Graph g("t");
  check_error([&] { g.set_name("x}"); }, {"invalid graph name 'x}'"});
  CHECK(g.name() == "t");
  g.set_name("t.2");
  const TensorType f2{DType::f32, {2}};
  check_error([&] { g.declare(ValueKind::param, "w", f2, {{"a b", int64_t{1}}}); }, {"invalid attribute name 'a b'"});
  const auto not_utf8 = [&] { g.declare(ValueKind::param, "w", f2, {{"init", std::string("ab\xff")}}); };
  check_error(not_utf8, {"attribute 'init': the string is not UTF-8 (malformed at byte 3)"});
  Attrs attrs;
  check_error([&] { attrs.set("1x", true); }, {"invalid attribute name '1x'"});
  CHECK(attrs.empty());
  attrs.set("_x1", std::string("Grüße"));
  CHECK(g.find("w") == std::nullopt);
}

TEST_CASE("a declaration's type has no negative dims and a countable size") {
  Graph g("t");
  const TensorType negative{DType::f32, {0, -3}}, huge{DType::f32, {int64_t{1} << 62, 4}};
  check_error([&] { g.declare(ValueKind::param, "w", negative); }, {"param %w: f32[0,-3] has a negative dimension"});
  check_error([&] { g.declare(ValueKind::input, "x", huge); },
              {"input %x: shape [4611686018427387904,4] has too many elements"});
  const auto evil = [&] { g.declare(ValueKind::param, "w", {DType::f32, {2}}, {{"init", std::string("evil")}}); };
  check_error(evil, {"param %w: unknown init \"evil\""});
  CHECK(g.declarations().empty());
}

TEST_CASE("a node whose result names are bad adds nothing") {
  Graph g("t");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2}});
  const OpDef* exp = OpRegistry::global().find("exp");
  const std::vector<TensorType> two = {b.type(x), b.type(x)};
  check_error([&] { g.add_node(exp, {x}, {}, two, {"ok", "bad name"}); }, {"invalid value name 'bad name'"});
  check_error([&] { g.add_node(exp, {x}, {}, two, {"x", "y"}); }, {"value %x is already defined"});
  check_error([&] { g.add_node(exp, {x}, {}, two, {"y", "y"}); }, {"value %y is already defined"});
  CHECK(g.nodes().empty());
  CHECK(g.num_values() == 1);
  g.add_node(exp, {x}, {}, two, {"", "0"});  // the fresh name avoids the other result's
  CHECK(g.name_of(g.nodes()[0].results[0]) == "1");
  CHECK(g.name_of(g.nodes()[0].results[1]) == "0");
}

TEST_CASE("the builder refuses an assign the verifier would refuse") {
  Graph g("t");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2}}), w = b.param("w", {DType::f32, {2}});
  check_error([&] { b.emit("assign", {x, w}); }, {"assign(f32[2], f32[2]): target %x is not a param or state"});
  b.emit("assign", {w, x});
  check_error([&] { b.emit("assign", {w, x}); }, {"assign(f32[2], f32[2]): %w is assigned more than once"});
  CHECK(g.nodes().size() == 1);
  CHECK(verify_problems(g).empty());
}

TEST_CASE("an op whose result could not exist is refused") {
  Graph g("t");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {7, 1}}), y = b.input("y", {DType::f32, {int64_t{1} << 62}});
  const auto add = [&] { b.emit("add", {x, y}); };
  check_error(add, {"add(f32[7,1], f32[4611686018427387904]): shape [7,4611686018427387904] has too many elements"});
  CHECK(g.nodes().empty());
}

TEST_CASE("a fusion's kind is one of the kinds codegen has an emitter for, else the verifier names it and them") {
  for (const std::string kind : {"loop", "input", "row", "epilogue", "horizontal"}) {
    CAPTURE(kind);
    REQUIRE(parse_fusion_kind(kind).has_value());
    CHECK(fusion_kind_name(*parse_fusion_kind(kind)) == kind);
  }
  CHECK_FALSE(parse_fusion_kind("matmul").has_value());  // an op, not a kind
  const std::string text = R"(graph @g {
  input %x : f32[2]
  %y = fusion(%x) {kind="fastest"} : f32[2] graph @f {
    input %p0 : f32[2]
    %e = exp(%p0) : f32[2]
    output %e
  }
  output %y
})";
  // The parser runs the verifier: the error has the fusion's place in the file.
  std::string message;
  try {
    parse_kir(text, "g.kir");
  } catch (const ParseError& e) {
    message = e.what();
  }
  CAPTURE(message);
  CHECK(message.rfind("g.kir:3:", 0) == 0);
  CHECK(message.find("unknown fusion kind 'fastest' (kinds: loop, input, row, epilogue, horizontal)") !=
        std::string::npos);
}

TEST_CASE("a horizontal fusion's body holds loop fusions, one level deep, and prints and parses back exactly") {
  const auto body_of = [](const std::string& parts) {
    return "graph @g {\n"
           "  input %x : f32[2]\n"
           "  %y, %z = fusion(%x) {kind=\"horizontal\"} : f32[2], f32[2] graph @h {\n"
           "    input %p0 : f32[2]\n" +
           parts +
           "    output %a\n"
           "    output %b\n"
           "  }\n"
           "  output %y\n"
           "  output %z\n"
           "}\n";
  };
  const auto part = [](const std::string& name, const std::string& kind, const std::string& op) {
    // loop is the default kind, which the printer leaves out.
    const std::string attrs = kind == "loop" ? "" : " {kind=\"" + kind + "\"}";
    return "    %" + name + " = fusion(%p0)" + attrs + " : f32[2] graph @" + name + " {\n" +
           "      input %q0 : f32[2]\n" + "      %e = " + op + "(%q0) : f32[2]\n" + "      output %e\n" + "    }\n";
  };
  const std::string text = body_of(part("a", "loop", "exp") + part("b", "loop", "neg"));
  CHECK(print_kir(parse_kir(text, "g.kir")) == text);
  const auto error = [](const std::string& t) {
    try {
      parse_kir(t, "g.kir");
    } catch (const ParseError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // A plain op beside the parts: refused at the op.
  std::string message = error(body_of(part("a", "loop", "exp") + "    %b = neg(%p0) : f32[2]\n"));
  CHECK(message.rfind("g.kir:10:", 0) == 0);
  CHECK(message.find("a horizontal fusion's body holds loop fusions only, not 'neg'") != std::string::npos);
  // A part of another kind: refused at the part (line 10), naming it, not at the fusion around it.
  message = error(body_of(part("a", "loop", "exp") + part("b", "row", "neg")));
  CAPTURE(message);
  CHECK(message.rfind("g.kir:10:10:", 0) == 0);
  CHECK(message.find("%b: a horizontal fusion's body holds loop fusions only, not a fusion of kind 'row'") !=
        std::string::npos);
  // No deeper: a loop part holds plain ops.
  const std::string deeper = body_of(part("a", "loop", "exp") +
                                     "    %b = fusion(%p0) {kind=\"loop\"} : f32[2] graph @b {\n"
                                     "      input %q0 : f32[2]\n"
                                     "      %c = fusion(%q0) {kind=\"loop\"} : f32[2] graph @c {\n"
                                     "        input %r0 : f32[2]\n"
                                     "        %e = neg(%r0) : f32[2]\n"
                                     "        output %e\n"
                                     "      }\n"
                                     "      output %c\n"
                                     "    }\n");
  message = error(deeper);
  CAPTURE(message);
  CHECK(message.rfind("g.kir:12:12:", 0) == 0);  // at the innermost fusion
  CHECK(message.find("%c: a fusion body holds plain ops only, not 'fusion'") != std::string::npos);
}

TEST_CASE("same_computation compares structure, not names") {
  const auto make = [](const std::string& name, const std::string& op, int64_t n) {
    Graph g(name);
    Builder b(g);
    const Value x = b.input(name + "_x", {DType::f32, {n}});
    g.add_output(b.emit1(op, {b.emit1("exp", {x})}));
    return g;
  };
  const Graph a = make("a", "neg", 4);
  CHECK(same_computation(a, a));
  CHECK(same_computation(a, make("b", "neg", 4)));
  CHECK_FALSE(same_computation(a, make("a", "tanh", 4)));
  CHECK_FALSE(same_computation(a, make("a", "neg", 5)));
}
