// cse and dce on small graphs: what merges, what never does, what is dead.
#include <doctest/doctest.h>

#include "passes/kir_graph.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("cse merges equal nodes, through chains, and keeps output names (the survivor takes one)") {
  const Graph g =
      kir("  input %x : f32[2]\n  %a = exp(%x) : f32[2]\n  %b = exp(%x) : f32[2]\n  %c = tanh(%a) : f32[2]\n"
          "  %d = tanh(%b) : f32[2]\n  %e = add(%c, %d) : f32[2]\n  %f1 = fill() {shape=[2], value=1.0} : f32[2]\n"
          "  %f2 = fill() {shape=[2], value=1.0} : f32[2]\n  %g = add(%f1, %f2) : f32[2]\n  output %e\n  output %d\n"
          "  output %g\n");
  const Graph out = after(g, {"cse"});
  CHECK(node_lines(out) ==
        "a = exp(%x) : f32[2]\nd = tanh(%a) : f32[2]\ne = add(%d, %d) : f32[2]\n"
        "f1 = fill() {shape=[2], value=1.0} : f32[2]\ng = add(%f1, %f1) : f32[2]\n");
  // Two outputs of one value: the second name is carried by an identity.
  CHECK(node_lines(after(kir("  input %x : f32[2]\n  %a = exp(%x) : f32[2]\n  %b = exp(%x) : f32[2]\n"
                             "  output %a\n  output %b\n"),
                         {"cse"})) == "a = exp(%x) : f32[2]\nb = identity(%a) : f32[2]\n");
  CHECK(compare_observed(run_interpreter(g, {{"x", Tensor(Tensor::F32{1.0f, -2.0f})}}),
                         run_interpreter(out, {{"x", Tensor(Tensor::F32{1.0f, -2.0f})}})) == "");
}

TEST_CASE("cse keeps nodes that differ in attributes, operand order or result type") {
  const std::string body =
      "  input %x : f32[2,3]\n  input %y : f32[2,3]\n  %a = sum(%x) {axes=[0]} : f32[3]\n"
      "  %b = sum(%x) {axes=[1]} : f32[2]\n  %c = sum(%x) {axes=[0], keepdims=true} : f32[1,3]\n"
      "  %d = sub(%x, %y) : f32[2,3]\n  %e = sub(%y, %x) : f32[2,3]\n"
      "  %f = fill() {shape=[2], value=0.0} : f32[2]\n  %g = fill() {shape=[2], value=-0.0} : f32[2]\n"
      "  %h = fill() {shape=[2], dtype=i32} : i32[2]\n"
      "  output %a\n  output %b\n  output %c\n  output %d\n  output %e\n  output %f\n  output %g\n  output %h\n";
  CHECK(node_lines(after(kir(body), {"cse"})) == node_lines(kir(body)));
}

TEST_CASE("cse never merges assigns; dropout with equal operands and seed merges") {
  const Graph g =
      kir("  param %w : f32[2]\n  state %s : f32[2]\n  input %k : i32[]\n  %a = exp(%w) : f32[2]\n"
          "  assign(%w, %a)\n  assign(%s, %a)\n  %d1 = dropout(%a, %k) {rate=0.5, seed=3} : f32[2]\n"
          "  %d2 = dropout(%a, %k) {rate=0.5, seed=3} : f32[2]\n  %d3 = dropout(%a, %k) {rate=0.5, seed=4} : f32[2]\n"
          "  %y = add(%d1, %d2) : f32[2]\n  %z = add(%y, %d3) : f32[2]\n  output %z\n");
  const Graph out = after(g, {"cse"});
  CHECK(count_op(out, "assign") == 2);
  CHECK(count_op(out, "dropout") == 2);
  Rng rng(1);
  const auto bindings = pass_bindings(g, rng);
  CHECK(compare_observed(run_interpreter(g, bindings), run_interpreter(out, bindings)) == "");
}

TEST_CASE("dce drops what reaches no output or assign, keeps every declaration") {
  const Graph g =
      kir("  input %x : f32[2]\n  input %unused : f32[3]\n  param %w : f32[2]\n  %dead = exp(%x) : f32[2]\n"
          "  %dead2 = tanh(%dead) : f32[2]\n  %u = neg(%x) : f32[2]\n  assign(%w, %u)\n  %y = relu(%x) : f32[2]\n"
          "  output %y\n");
  const Graph out = after(g, {"dce"});
  CHECK(node_lines(out) == "u = neg(%x) : f32[2]\nassign(%w, %u)\ny = relu(%x) : f32[2]\n");
  CHECK(out.declarations().size() == 3);
  CHECK(out.name_of(out.declarations()[1]) == "unused");
}

TEST_CASE("cse's survivor takes the scopes of the nodes it stands for; fusion names scopes in its decisions") {
  const Graph g = kir("  input %x : f32[2]\n  %a = exp(%x) : f32[2] loc(\"enc.0.ffn\")\n"
                      "  %b = exp(%x) : f32[2] loc(\"enc.1.ffn\")\n  %c = add(%a, %b) : f32[2] loc(\"loss\")\n"
                      "  output %c\n");
  const Graph out = after(g, {"cse"});
  CHECK(node_lines(out) == "a = exp(%x) : f32[2] loc(\"enc.0.ffn\", \"enc.1.ffn\")\n"
                           "c = add(%a, %a) : f32[2] loc(\"loss\")\n");
  const Graph fused = after(out, {"fusion"});
  REQUIRE(fused.nodes().size() == 1);
  CHECK(fused.nodes()[0].loc.scopes == std::vector<std::string>{"enc.0.ffn", "enc.1.ffn", "loss"});
}
