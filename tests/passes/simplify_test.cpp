// One test per simplify rule (compiler/passes/simplify.cpp's table), with the
// cases it must leave alone.
#include <doctest/doctest.h>

#include "passes/kir_graph.h"
#include "passes/pass_test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// The default pipeline's graph passes, without fusion.
const std::vector<std::string> kGraphPasses = {"constant-fold", "simplify", "cse", "dce"};

// simplify, then dce to drop what it bypassed.
std::string simplified(const std::string& body) { return node_lines(after(kir(body), {"simplify", "dce"})); }

}  // namespace

TEST_CASE("x*1, 1*x and x/1 become x when the type is x's") {
  const std::string decls = "  input %x : f32[2,3]\n  %one = fill() {shape=[3], value=1.0} : f32[3]\n";
  CHECK(simplified(decls + "  %y = mul(%x, %one) : f32[2,3]\n  %z = exp(%y) : f32[2,3]\n  output %z\n") ==
        "z = exp(%x) : f32[2,3]\n");
  CHECK(simplified(decls + "  %y = mul(%one, %x) : f32[2,3]\n  %z = exp(%y) : f32[2,3]\n  output %z\n") ==
        "z = exp(%x) : f32[2,3]\n");
  CHECK(simplified(decls + "  %y = div(%x, %one) : f32[2,3]\n  %z = exp(%y) : f32[2,3]\n  output %z\n") ==
        "z = exp(%x) : f32[2,3]\n");
  // i32 too (a fill's value must fit its dtype: 1.5 is no i32, ops/constant.cpp).
  CHECK(simplified("  input %i : i32[4]\n  %one = fill() {shape=[], value=1.0, dtype=i32} : i32[]\n"
                   "  %y = mul(%i, %one) : i32[4]\n  %z = neg(%y) : i32[4]\n  output %z\n") ==
        "z = neg(%i) : i32[4]\n");
}

TEST_CASE("x*1 with a broadcast-widening 1, 1/x, and x*0 are left alone") {
  const std::string widen =
      "  input %x : f32[3]\n  %one = fill() {shape=[2,3], value=1.0} : f32[2,3]\n"
      "  %y = mul(%x, %one) : f32[2,3]\n  output %y\n";
  CHECK(simplified(widen) == node_lines(kir(widen)));
  const std::string recip =
      "  input %x : f32[3]\n  %one = fill() {shape=[], value=1.0} : f32[]\n  %y = div(%one, %x) : f32[3]\n"
      "  output %y\n";
  CHECK(simplified(recip) == node_lines(kir(recip)));
  // x*0 is not 0: inf*0 and nan*0 are nan.
  const std::string times_zero =
      "  input %x : f32[3]\n  %zero = fill() {shape=[], value=0.0} : f32[]\n  %y = mul(%x, %zero) : f32[3]\n"
      "  output %y\n";
  CHECK(simplified(times_zero) == node_lines(kir(times_zero)));
  CHECK(node_lines(after(kir(times_zero), kGraphPasses)) == node_lines(kir(times_zero)));  // nor does the pipeline fold it
  // x-x is not 0 either.
  const std::string minus_self = "  input %x : f32[3]\n  %y = sub(%x, %x) : f32[3]\n  output %y\n";
  CHECK(node_lines(after(kir(minus_self), kGraphPasses)) == node_lines(kir(minus_self)));
}

TEST_CASE("x+0 and x-0 keep the sign of zero: only the exact cases fold") {
  const auto body = [](const std::string& op, const std::string& value, bool zero_first) {
    const std::string operands = zero_first ? "%zero, %x" : "%x, %zero";
    return "  input %x : f32[3]\n  %zero = fill() {shape=[], value=" + value + "} : f32[]\n  %y = " + op + "(" +
           operands + ") : f32[3]\n  %z = exp(%y) : f32[3]\n  output %z\n";
  };
  CHECK(simplified(body("add", "-0.0", false)) == "z = exp(%x) : f32[3]\n");
  CHECK(simplified(body("add", "-0.0", true)) == "z = exp(%x) : f32[3]\n");
  CHECK(simplified(body("sub", "0.0", false)) == "z = exp(%x) : f32[3]\n");
  // -0.0 + +0.0 is +0.0, and -0.0 - -0.0 is +0.0: these would change x = -0.0.
  CHECK(simplified(body("add", "0.0", false)).find("add") != std::string::npos);
  CHECK(simplified(body("sub", "-0.0", false)).find("sub") != std::string::npos);
  // 0 - x is not x.
  CHECK(simplified(body("sub", "0.0", true)).find("sub") != std::string::npos);
  // Integers have one zero.
  CHECK(simplified("  input %i : i32[2]\n  %zero = fill() {shape=[2], dtype=i32} : i32[2]\n"
                   "  %y = add(%zero, %i) : i32[2]\n  %z = neg(%y) : i32[2]\n  output %z\n") ==
        "z = neg(%i) : i32[2]\n");
  // A zero that widens x is kept.
  const std::string widen =
      "  input %x : f32[3]\n  %zero = fill() {shape=[4,3], value=-0.0} : f32[4,3]\n"
      "  %y = add(%x, %zero) : f32[4,3]\n  output %y\n";
  CHECK(simplified(widen) == node_lines(kir(widen)));
}

TEST_CASE("neg(neg(x)), cast to the same dtype and identity become x") {
  CHECK(simplified("  input %x : f32[2]\n  %a = neg(%x) : f32[2]\n  %b = neg(%a) : f32[2]\n"
                   "  %c = exp(%b) : f32[2]\n  output %c\n") == "c = exp(%x) : f32[2]\n");
  CHECK(simplified("  input %x : f32[2]\n  %a = cast(%x) {dtype=f32} : f32[2]\n  %c = exp(%a) : f32[2]\n"
                   "  output %c\n") == "c = exp(%x) : f32[2]\n");
  // A cast that changes the dtype stays.
  CHECK(simplified("  input %x : f32[2]\n  %a = cast(%x) {dtype=i32} : i32[2]\n  output %a\n") ==
        "a = cast(%x) {dtype=i32} : i32[2]\n");
  CHECK(simplified("  input %x : f32[2]\n  %a = exp(%x) : f32[2]\n  %b = identity(%a) : f32[2]\n"
                   "  %c = tanh(%b) : f32[2]\n  output %c\n") == "a = exp(%x) : f32[2]\nc = tanh(%a) : f32[2]\n");
}

TEST_CASE("an identity that names an output: the output keeps its name") {
  // %a takes the output's name: no identity needed.
  CHECK(simplified("  input %x : f32[2]\n  %a = exp(%x) : f32[2]\n  %y = identity(%a) : f32[2]\n  output %y\n") ==
        "y = exp(%x) : f32[2]\n");
  // A declaration cannot be renamed, nor a value that is another output: an identity carries the name.
  CHECK(simplified("  input %x : f32[2]\n  %y = identity(%x) : f32[2]\n  output %y\n") ==
        "y = identity(%x) : f32[2]\n");
  const Graph g = after(kir("  input %x : f32[2]\n  %a = exp(%x) : f32[2]\n  %y = identity(%a) : f32[2]\n"
                            "  output %a\n  output %y\n"),
                        {"simplify", "dce"});
  CHECK(node_lines(g) == "a = exp(%x) : f32[2]\ny = identity(%a) : f32[2]\n");
}

TEST_CASE("transpose pairs compose, and cancel when the composition is the identity") {
  CHECK(simplified("  input %x : f32[2,3,4]\n  %a = transpose(%x) {perm=[2,0,1]} : f32[4,2,3]\n"
                   "  %b = transpose(%a) {perm=[1,2,0]} : f32[2,3,4]\n  %c = exp(%b) : f32[2,3,4]\n  output %c\n") ==
        "c = exp(%x) : f32[2,3,4]\n");
  CHECK(simplified("  input %x : f32[2,3,4]\n  %a = transpose(%x) {perm=[2,0,1]} : f32[4,2,3]\n"
                   "  %b = transpose(%a) {perm=[0,2,1]} : f32[4,3,2]\n  output %b\n") ==
        "b = transpose(%x) {perm=[2,1,0]} : f32[4,3,2]\n");
  // Three in a row collapse in one sweep.
  CHECK(simplified("  input %x : f32[2,3]\n  %a = transpose(%x) {perm=[1,0]} : f32[3,2]\n"
                   "  %b = transpose(%a) {perm=[1,0]} : f32[2,3]\n  %c = transpose(%b) {perm=[1,0]} : f32[3,2]\n"
                   "  output %c\n") == "c = transpose(%x) {perm=[1,0]} : f32[3,2]\n");
  CHECK(simplified("  input %x : f32[2,3]\n  %a = transpose(%x) {perm=[0,1]} : f32[2,3]\n  %c = exp(%a) : f32[2,3]\n"
                   "  output %c\n") == "c = exp(%x) : f32[2,3]\n");
}

TEST_CASE("reshape and broadcast chains collapse; to the same shape they vanish") {
  CHECK(simplified("  input %x : f32[2,3]\n  %a = reshape(%x) {shape=[6]} : f32[6]\n"
                   "  %b = reshape(%a) {shape=[3,-1]} : f32[3,2]\n  output %b\n") ==
        "b = reshape(%x) {shape=[3,-1]} : f32[3,2]\n");
  CHECK(simplified("  input %x : f32[2,3]\n  %a = reshape(%x) {shape=[6]} : f32[6]\n"
                   "  %b = reshape(%a) {shape=[2,3]} : f32[2,3]\n  %c = exp(%b) : f32[2,3]\n  output %c\n") ==
        "c = exp(%x) : f32[2,3]\n");
  CHECK(simplified("  input %x : f32[3]\n  %a = broadcast(%x) {shape=[2,3]} : f32[2,3]\n"
                   "  %b = broadcast(%a) {shape=[4,2,3]} : f32[4,2,3]\n  output %b\n") ==
        "b = broadcast(%x) {shape=[4,2,3]} : f32[4,2,3]\n");
  CHECK(simplified("  input %x : f32[3]\n  %a = broadcast(%x) {shape=[3]} : f32[3]\n  %c = exp(%a) : f32[3]\n"
                   "  output %c\n") == "c = exp(%x) : f32[3]\n");
}

TEST_CASE("(x*a)*b becomes x*(a*b) with one fill; x*a*(1/a) becomes x") {
  CHECK(simplified("  input %x : f32[2,3]\n  %a = fill() {shape=[3], value=2.0} : f32[3]\n"
                   "  %b = fill() {shape=[], value=0.75} : f32[]\n  %m = mul(%a, %x) : f32[2,3]\n"
                   "  %y = mul(%b, %m) : f32[2,3]\n  output %y\n") ==
        "y.c = fill() {shape=[3], value=1.5} : f32[3]\ny = mul(%x, %y.c) : f32[2,3]\n");
  CHECK(simplified("  input %x : f32[2]\n  %a = fill() {shape=[], value=4.0} : f32[]\n"
                   "  %b = fill() {shape=[], value=0.25} : f32[]\n  %m = mul(%x, %a) : f32[2]\n"
                   "  %y = mul(%m, %b) : f32[2]\n  %z = exp(%y) : f32[2]\n  output %z\n") == "z = exp(%x) : f32[2]\n");
  // Factors whose product could overflow or underflow are not reassociated, nor i32.
  const std::string huge =
      "  input %x : f32[2]\n  %a = fill() {shape=[], value=1e30} : f32[]\n"
      "  %b = fill() {shape=[], value=1e-30} : f32[]\n  %m = mul(%x, %a) : f32[2]\n  %y = mul(%m, %b) : f32[2]\n"
      "  output %y\n";
  CHECK(simplified(huge) == node_lines(kir(huge)));
  const std::string ints =
      "  input %x : i32[2]\n  %a = fill() {shape=[], value=3.0, dtype=i32} : i32[]\n"
      "  %m = mul(%x, %a) : i32[2]\n  %y = mul(%m, %a) : i32[2]\n  output %y\n";
  CHECK(simplified(ints) == node_lines(kir(ints)));
}

TEST_CASE("simplify's rewrites give the original results on random inputs") {
  const Graph g =
      kir("  input %x : f32[2,3]\n  %one = fill() {shape=[3], value=1.0} : f32[3]\n  %a = mul(%x, %one) : f32[2,3]\n"
          "  %t = transpose(%a) {perm=[1,0]} : f32[3,2]\n  %u = transpose(%t) {perm=[1,0]} : f32[2,3]\n"
          "  %n = neg(%u) : f32[2,3]\n  %nn = neg(%n) : f32[2,3]\n  %r = reshape(%nn) {shape=[6]} : f32[6]\n"
          "  %rr = reshape(%r) {shape=[3,2]} : f32[3,2]\n  %c = fill() {shape=[], value=3.0} : f32[]\n"
          "  %d = fill() {shape=[], value=0.5} : f32[]\n  %m = mul(%rr, %c) : f32[3,2]\n  %y = mul(%d, %m) : f32[3,2]\n"
          "  output %y\n  output %nn\n");
  const Graph out = after(g, {"simplify", "dce"});
  CHECK(out.nodes().size() < g.nodes().size());
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Rng rng(seed);
    const auto bindings = pass_bindings(g, rng);
    CHECK(compare_observed(run_interpreter(g, bindings), run_interpreter(out, bindings), 1e-6, 0) == "");
  }
}
