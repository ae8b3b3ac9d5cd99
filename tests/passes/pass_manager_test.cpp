// The pass manager: registry, unknown names, dumps, timing, verify_each and the invariants.
#include <doctest/doctest.h>

#include <functional>
#include <sstream>

#include "compiler/passes/passes.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"
#include "passes/kir_graph.h"

using namespace kiln;
using namespace kiln::test;
using compiler::PassOptions;
using compiler::PassRegistry;

namespace {

const std::string kBody =
    "  input %x : f32[2]\n  param %p : f32[2] {init=\"ones\"}\n  %one = fill() {shape=[], value=1.0} : f32[]\n"
    "  %a = mul(%x, %one) : f32[2]\n  %b = exp(%a) : f32[2]\n  %c = exp(%x) : f32[2]\n  %d = add(%b, %c) : f32[2]\n"
    "  assign(%p, %d)\n  output %d\n";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the default pipeline is constant-fold, simplify, transpose-folding, pretranspose-weights, cse, "
          "linear-cross-entropy, flash-attention, dce, allreduce-buckets, fusion, horizontal-fusion, dce, and runs "
          "when no pass is named") {
  CHECK(PassRegistry::global().default_pipeline() ==
        std::vector<std::string>{"constant-fold", "simplify", "transpose-folding", "pretranspose-weights", "cse",
                                 "linear-cross-entropy", "flash-attention", "dce", "allreduce-buckets", "fusion",
                                 "horizontal-fusion", "dce"});
  const Graph out = after(kir(kBody), {"constant-fold", "simplify", "cse", "dce"});
  CHECK(node_lines(out) == "b = exp(%x) : f32[2]\nd = add(%b, %b) : f32[2]\nassign(%p, %d)\n");
  CHECK(node_lines(after(kir(kBody), {})).find("d = fusion(%x)") == 0);
}

TEST_CASE("unknown pass names are errors naming them and the known passes, before anything runs") {
  const Graph g = kir(kBody);
  PassOptions opts;
  opts.passes = {"simplify", "fuse-everything"};
  CHECK(error_of([&] { compiler::run_passes(g, opts); }) ==
        "unknown pass 'fuse-everything' (known: constant-fold, simplify, transpose-folding, pretranspose-weights, "
        "cse, linear-cross-entropy, flash-attention, bf16-matmuls, bf16-saves, dce, allreduce-buckets, fusion, horizontal-fusion)");
  opts.passes = {};
  opts.print_after = {"nope"};
  CHECK(error_of([&] { compiler::run_passes(g, opts); }).find("unknown pass 'nope'") == 0);
}

TEST_CASE("a registered pass can join the default pipeline after the built-in ones") {
  PassRegistry r;
  compiler::register_builtin_passes(r);
  r.add({"rename-graph", "a test pass that breaks an invariant",
         [](const Graph& g, std::ostream*) {
           Graph out = g;
           out.set_name("other");
           return out;
         }},
        true);
  CHECK(r.default_pipeline().back() == "rename-graph");
  CHECK(error_of([&] { r.add({"cse", "again", [](const Graph& g, std::ostream*) { return compiler::cse(g); }}); }) == "pass 'cse' is already registered");
  CHECK(error_of([&] {
          r.add({"Bad_Name", "", [](const Graph& g, std::ostream*) { return compiler::cse(g); }});
        }).find("not lowercase kebab-case") != std::string::npos);
  // verify_each names the pass that broke an invariant.
  PassOptions opts;
  opts.verify_each = true;
  const std::string msg = error_of([&] { compiler::run_passes(kir(kBody), opts, r); });
  CHECK(msg.find("pass 'rename-graph' produced an invalid graph") == 0);
  CHECK(msg.find("graph renamed to @other") != std::string::npos);
}

TEST_CASE("verify_each catches a pass that produces an unverifiable graph or drops a declaration") {
  PassRegistry r;
  r.add({"break-types", "stores a wrong result type", [](const Graph& g, std::ostream*) {
           Graph out = g;
           const Value x = *out.find("x");
           out.add_node(OpRegistry::global().find("exp"), {x}, {}, {{DType::f32, {7}}}, {"bad"});
           return out;
         }});
  r.add({"drop-decls", "forgets the declarations", [](const Graph& g, std::ostream*) { return Graph(g.name()); }});
  PassOptions opts;
  opts.verify_each = true;
  opts.passes = {"break-types"};
  const std::string msg = error_of([&] { compiler::run_passes(kir(kBody), opts, r); });
  CHECK(msg.find("pass 'break-types' produced an invalid graph") == 0);
  CHECK(msg.find("%bad is typed f32[7]") != std::string::npos);
  opts.passes = {"drop-decls"};
  const std::string dropped = error_of([&] { compiler::run_passes(kir(kBody), opts, r); });
  CHECK(dropped.find("declarations changed") != std::string::npos);
  CHECK(dropped.find("output names or order changed") != std::string::npos);
  CHECK(dropped.find("assigns changed") != std::string::npos);
  opts.verify_each = false;
  CHECK_NOTHROW(compiler::run_passes(kir(kBody), opts, r));
}

TEST_CASE("dumps look like LLVM's, before and after the named passes") {
  std::ostringstream dump;
  PassOptions opts;
  opts.dump = &dump;
  opts.print_before = {"cse"};
  opts.print_after = {"simplify"};
  const Graph out = compiler::run_passes(kir(kBody), opts);
  const std::string text = dump.str();
  const size_t after_simplify = text.find("; *** IR Dump After simplify ***\ngraph @t {\n");
  const size_t before_cse = text.find("; *** IR Dump Before cse ***\ngraph @t {\n");
  CHECK(after_simplify == 0);
  CHECK(before_cse != std::string::npos);
  CHECK(text.find("Dump After cse") == std::string::npos);
  CHECK(text.find("Dump After dce") == std::string::npos);

  std::ostringstream all;
  opts = {};
  opts.dump = &all;
  opts.print_after_all = true;
  compiler::run_passes(kir(kBody), opts);
  size_t pos = 0;
  for (const char* pass : {"constant-fold", "simplify", "cse", "dce"}) {
    pos = all.str().find(std::string("; *** IR Dump After ") + pass + " ***\n", pos);
    CHECK(pos != std::string::npos);
  }
  // The last dump is the final graph.
  CHECK(all.str().substr(all.str().rfind("graph @t")) == print_kir(out));
}

TEST_CASE("time_passes prints one row per pass with node counts, and a total") {
  std::ostringstream dump;
  PassOptions opts;
  opts.dump = &dump;
  opts.time_passes = true;
  compiler::run_passes(kir(kBody), opts);
  const std::string t = dump.str();
  CHECK(t.find("; pass") == 0);
  CHECK(t.find("simplify") != std::string::npos);
  CHECK(t.find("6 -> 5") != std::string::npos);  // simplify bypasses the mul (dce drops it and the fill)
  CHECK(t.find("5 -> 4") != std::string::npos);  // cse merges the exps
  CHECK(t.find("; total") != std::string::npos);
  CHECK(t.find("4 -> 3") != std::string::npos);  // dce drops the fill
  CHECK(t.find("3 -> 2") != std::string::npos);  // fusion: exp and add in one loop, beside the assign
  CHECK(t.find("6 -> 2") != std::string::npos);  // total
}

TEST_CASE("an invalid input graph is reported as the input's problem, not a pass's") {
  Graph g("bad");
  const Value x = g.declare(ValueKind::input, "x", {DType::f32, {2}});
  g.add_node(OpRegistry::global().find("exp"), {x}, {}, {{DType::f32, {3}}}, {"y"});
  PassOptions opts;
  opts.verify_each = true;
  CHECK(error_of([&] { compiler::run_passes(g, opts); }).find("the input graph @bad fails verification") == 0);
}
