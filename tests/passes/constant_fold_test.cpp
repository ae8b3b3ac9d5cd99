// constant-fold: splat results of constant operands become fills; everything else stays.
#include <doctest/doctest.h>

#include "compiler/passes/passes.h"
#include "passes/kir_graph.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

std::string folded(const std::string& body) { return node_lines(after(kir(body), {"constant-fold", "dce"})); }

}  // namespace

TEST_CASE("elementwise ops of splats fold to a fill at any size, through chains") {
  CHECK(folded("  %a = fill() {shape=[1000,1000], value=2.0} : f32[1000,1000]\n"
               "  %b = fill() {shape=[1000], value=0.25} : f32[1000]\n  %c = add(%a, %b) : f32[1000,1000]\n"
               "  %d = exp(%c) : f32[1000,1000]\n  output %d\n") ==
        "d = fill() {shape=[1000,1000], value=9.487735748291016} : f32[1000,1000]\n");
  // Comparisons, select and casts change the dtype.
  CHECK(folded("  %a = fill() {shape=[2], value=2.0} : f32[2]\n  %b = fill() {shape=[2], value=3.0} : f32[2]\n"
               "  %c = less(%a, %b) : bool[2]\n  %d = select(%c, %a, %b) : f32[2]\n"
               "  %e = cast(%d) {dtype=i32} : i32[2]\n  output %e\n") ==
        "e = fill() {dtype=i32, shape=[2], value=2.0} : i32[2]\n");
}

TEST_CASE("shape ops of a splat fold at any size") {
  CHECK(folded("  %a = fill() {shape=[300,400], value=-0.0} : f32[300,400]\n"
               "  %b = transpose(%a) {perm=[1,0]} : f32[400,300]\n  %c = reshape(%b) {shape=[-1]} : f32[120000]\n"
               "  %d = slice(%c) {axes=[0], starts=[5], ends=[10]} : f32[5]\n  output %d\n") ==
        "d = fill() {shape=[5], value=-0.0} : f32[5]\n");
}

TEST_CASE("small results are evaluated in full and folded when they are splats") {
  // A sum of a splat, the iota of one element, a matmul of fills.
  CHECK(folded("  %a = fill() {shape=[4,8], value=0.5} : f32[4,8]\n  %s = sum(%a) {axes=[1]} : f32[4]\n"
               "  output %s\n") == "s = fill() {shape=[4], value=4.0} : f32[4]\n");
  CHECK(folded("  %i = iota() {shape=[1,3], axis=0} : i32[1,3]\n  %n = neg(%i) : i32[1,3]\n  output %n\n") ==
        "n = fill() {dtype=i32, shape=[1,3]} : i32[1,3]\n");
  CHECK(folded("  %a = fill() {shape=[2,3], value=1.0} : f32[2,3]\n  %b = fill() {shape=[3,2], value=2.0} : f32[3,2]\n"
               "  %m = matmul(%a, %b) : f32[2,2]\n  output %m\n") ==
        "m = fill() {shape=[2,2], value=6.0} : f32[2,2]\n");
}

TEST_CASE("non-splats, large non-elementwise results, inputs, dropout and assigns are not folded") {
  const std::string iota = "  %i = iota() {shape=[4]} : i32[4]\n  %n = neg(%i) : i32[4]\n  output %n\n";
  CHECK(folded(iota) == node_lines(kir(iota)));
  const std::string big_sum =
      "  %a = fill() {shape=[65,2], value=1.0} : f32[65,2]\n  %s = sum(%a) {axes=[1]} : f32[65]\n  output %s\n";
  CHECK(compiler::kMaxFoldElements == 64);
  CHECK(folded(big_sum) == node_lines(kir(big_sum)));
  const std::string input =
      "  input %x : f32[2]\n  %one = fill() {shape=[], value=1.0} : f32[]\n  %y = add(%x, %one) : f32[2]\n"
      "  output %y\n";
  CHECK(folded(input) == node_lines(kir(input)));
  const std::string dropout =
      "  %k = fill() {shape=[], dtype=i32} : i32[]\n  %a = fill() {shape=[4], value=1.0} : f32[4]\n"
      "  %d = dropout(%a, %k) {rate=0.5} : f32[4]\n  output %d\n";
  CHECK(folded(dropout) == node_lines(kir(dropout)));
  const std::string assign =
      "  param %w : f32[2]\n  %a = fill() {shape=[2], value=1.0} : f32[2]\n  assign(%w, %a)\n  output %w\n";
  CHECK(folded(assign) == node_lines(kir(assign)));
}

TEST_CASE("folding agrees bitwise with the interpreter, nan and signed zeros included") {
  const Graph g =
      kir("  %a = fill() {shape=[3], value=-1.0} : f32[3]\n  %l = log(%a) : f32[3]\n"
          "  %z = fill() {shape=[3], value=-0.0} : f32[3]\n  %m = mul(%z, %z) : f32[3]\n  %q = sqrt(%z) : f32[3]\n"
          "  %e = fill() {shape=[2,2], value=0.1} : f32[2,2]\n  %s = softmax(%e) : f32[2,2]\n"
          "  %t = tanh(%e) : f32[2,2]\n  output %l\n  output %m\n  output %q\n  output %s\n  output %t\n");
  const Graph out = after(g, {"constant-fold", "dce"});
  CHECK(count_op(out, "fill") == 5);
  CHECK(out.nodes().size() == 5);
  CHECK(compare_observed(run_interpreter(g, {}), run_interpreter(out, {})) == "");
}
