// kiln opt: prints or writes the optimized graph; pass selection, dumps, timing and bad input.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "cli/run_kiln.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "text_and_files.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// x*1 (simplify), a repeated exp (cse), a dead tanh (dce) and 2+0.25 (constant-fold);
// what is left becomes one loop fusion.
const std::string kGraph =
    "graph @g {\n"
    "  input %x : f32[2]\n"
    "  %one = fill() {shape=[], value=1.0} : f32[]\n"
    "  %a = mul(%x, %one) : f32[2]\n"
    "  %b = exp(%a) : f32[2]\n"
    "  %c = exp(%x) : f32[2]\n"
    "  %dead = tanh(%x) : f32[2]\n"
    "  %two = fill() {shape=[], value=2.0} : f32[]\n"
    "  %q = fill() {shape=[], value=0.25} : f32[]\n"
    "  %k = add(%two, %q) : f32[]\n"
    "  %d = add(%b, %c) : f32[2]\n"
    "  %y = mul(%d, %k) : f32[2]\n"
    "  output %y\n"
    "}\n";

const std::string kOptimized =
    "graph @g {\n"
    "  input %x : f32[2]\n"
    "  %y = fusion(%x) : f32[2] graph @f_y {\n"
    "    input %p0 : f32[2]\n"
    "    %b = exp(%p0) : f32[2]\n"
    "    %k = fill() {shape=[], value=2.25} : f32[]\n"
    "    %d = add(%b, %b) : f32[2]\n"
    "    %y = mul(%d, %k) : f32[2]\n"
    "    output %y\n"
    "  }\n"
    "  output %y\n"
    "}\n";

std::string write_graph(const TempDir& dir, const std::string& text, const std::string& name = "g.kir") {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("kiln opt prints the optimized graph, which reparses to itself") {
  TempDir dir;
  const KilnResult r = run_kiln({"opt", write_graph(dir, kGraph)});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out == kOptimized);
  CHECK(r.err.empty());
  CHECK(print_kir(parse_kir(r.out, "opt.kir")) == r.out);
}

TEST_CASE("kiln opt -o writes the file and prints nothing") {
  TempDir dir;
  const std::string out = dir.file("out.kir");
  const KilnResult r = run_kiln({"opt", write_graph(dir, kGraph), "-o", out});
  REQUIRE(r.status == 0);
  CHECK(r.out.empty());
  CHECK(read_file(out) == kOptimized);
  CHECK(!fs::exists(out + ".tmp"));
}

TEST_CASE("kiln opt --passes runs exactly the named passes, in order") {
  TempDir dir;
  const std::string in = write_graph(dir, kGraph);
  const KilnResult dce = run_kiln({"opt", in, "--passes=dce"});
  REQUIRE(dce.status == 0);
  CHECK(!contains(dce.out, "tanh"));
  CHECK(contains(dce.out, "%a = mul(%x, %one)"));
  CHECK(contains(dce.out, "%c = exp(%x)"));
  const KilnResult two = run_kiln({"opt", in, "--passes", "simplify,dce"});
  REQUIRE(two.status == 0);
  CHECK(!contains(two.out, "%a = mul"));
  CHECK(contains(two.out, "%c = exp(%x)"));        // no cse
  CHECK(contains(two.out, "%k = add(%two, %q)"));  // no constant-fold
  const KilnResult none = run_kiln({"opt", in, "--passes=none"});
  REQUIRE(none.status == 0);
  CHECK(none.out == print_kir(parse_kir(kGraph, "g.kir")));
}

TEST_CASE("kiln opt --print-after-all dumps after each pass to stderr") {
  TempDir dir;
  const KilnResult r = run_kiln({"opt", write_graph(dir, kGraph), "--print-after-all"});
  REQUIRE(r.status == 0);
  CHECK(r.out == kOptimized);
  size_t pos = 0;
  for (const char* pass : {"constant-fold", "simplify", "cse", "dce"}) {
    pos = r.err.find(std::string("; *** IR Dump After ") + pass + " ***\ngraph @g {\n", pos);
    CHECK(pos != std::string::npos);
  }
  CHECK(r.err.substr(r.err.rfind("graph @g")) == kOptimized);
}

TEST_CASE("kiln opt --print-changed prints the input, then only the passes that changed the graph") {
  TempDir dir;
  // Nothing to fold, simplify, merge or drop: only fusion changes it.
  const std::string plain =
      "graph @g {\n"
      "  input %x : f32[2]\n"
      "  %e = exp(%x) : f32[2]\n"
      "  %y = tanh(%e) : f32[2]\n"
      "  output %y\n"
      "}\n";
  const KilnResult r = run_kiln({"opt", write_graph(dir, plain), "--print-changed"});
  REQUIRE(r.status == 0);
  CHECK(r.err.find("; *** IR Dump At Start ***\ngraph @g {\n") == 0);
  for (const char* pass : {"constant-fold", "simplify", "transpose-folding", "pretranspose-weights", "cse",
                           "linear-cross-entropy", "flash-attention", "dce", "allreduce-buckets", "horizontal-fusion"})
    CHECK(contains(r.err, std::string("; *** IR Dump After ") + pass + " omitted because no change ***\n"));
  CHECK(contains(r.err, "; *** IR Dump After fusion ***\n" + r.out));  // the last change: the result
}

TEST_CASE("kiln opt --dump-dir writes the graph before and after each pass, numbered, and the fusion decisions") {
  TempDir dir;
  const KilnResult r = run_kiln({"opt", write_graph(dir, kGraph), "--dump-dir", dir.file("dump")});
  REQUIRE(r.status == 0);
  CHECK(r.out == kOptimized);
  const fs::path g = fs::path(dir.file("dump")) / "g";
  CHECK(read_file((g / "00-input.kir").string()) == print_kir(parse_kir(kGraph, "g.kir")));
  CHECK(fs::exists(g / "01-constant-fold.kir"));
  CHECK(fs::exists(g / "03-transpose-folding.kir"));
  CHECK(fs::exists(g / "04-pretranspose-weights.kir"));
  CHECK(fs::exists(g / "08-dce.kir"));
  CHECK(fs::exists(g / "10-fusion.kir"));
  CHECK(read_file((g / "12-dce.kir").string()) == kOptimized);
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(g)) files += entry.is_regular_file() ? 1 : 0;
  CHECK(files >= 12);  // the input and eleven passes, and the decisions of any pass that made one

  // A second graph of the same name in one process would get g.2; a new process starts again at g.
  const KilnResult again = run_kiln({"opt", write_graph(dir, kGraph), "--dump-dir", dir.file("dump")});
  REQUIRE(again.status == 0);
  CHECK(!fs::exists(fs::path(dir.file("dump")) / "g.2"));

  const KilnResult file = run_kiln({"opt", write_graph(dir, kGraph), "--dump-dir", write_graph(dir, kGraph, "f")});
  CHECK(file.status == 2);
  CHECK(contains(file.err, "--dump-dir"));
}

TEST_CASE("kiln opt --print-before and --print-after name one pass each") {
  TempDir dir;
  const KilnResult r = run_kiln({"opt", write_graph(dir, kGraph), "--print-before=cse", "--print-after", "simplify"});
  REQUIRE(r.status == 0);
  CHECK(r.err.find("; *** IR Dump After simplify ***\n") == 0);
  CHECK(contains(r.err, "; *** IR Dump Before cse ***\n"));
  CHECK(!contains(r.err, "After cse"));
  CHECK(!contains(r.err, "Before simplify"));
}

TEST_CASE("kiln opt --time-passes prints a table with node counts to stderr") {
  TempDir dir;
  const KilnResult r = run_kiln({"opt", write_graph(dir, kGraph), "--time-passes"});
  REQUIRE(r.status == 0);
  CHECK(r.out == kOptimized);
  CHECK(r.err.find("; pass") == 0);
  for (const char* row : {"; constant-fold", "; simplify", "; cse", "; dce", "; total"}) CHECK(contains(r.err, row));
  CHECK(contains(r.err, "10 -> 1"));
}

TEST_CASE("kiln opt --help lists the passes") {
  const KilnResult r = run_kiln({"opt", "--help"});
  CHECK(r.status == 0);
  for (const char* pass : {"constant-fold", "simplify", "cse", "dce"}) CHECK(contains(r.out, std::string("  ") + pass));
}

TEST_CASE("kiln opt rejects bad input with a message, a non-zero exit and no output file") {
  TempDir dir;
  const std::string good = write_graph(dir, kGraph);
  const std::string out = dir.file("out.kir");
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"opt", good, "--passes=simplify,fuse-all", "-o", out},
       2,
       "unknown pass 'fuse-all' (known: constant-fold, simplify, transpose-folding, pretranspose-weights, cse, "
       "linear-cross-entropy, flash-attention, bf16-matmuls, bf16-saves, dce, allreduce-buckets, fusion, horizontal-fusion)"},
      {{"opt", good, "--print-after=nope", "-o", out}, 2, "unknown pass 'nope'"},
      {{"opt", good, "--print-after=none", "-o", out}, 2, "unknown pass 'none'"},
      {{"opt", dir.file("missing.kir"), "-o", out}, 1, "cannot read"},
      {{"opt", source_path("tests/kir_bad/missing_equals.kir"), "-o", out},
       1,
       "missing_equals.kir:5:6: error: expected '=' or ','"},
      {{"opt", good, "-o", dir.file("no/such/dir/out.kir")},
       2,
       "--output: cannot write " + dir.file("no/such/dir/out.kir")},
  };
  for (const Case& c : cases) {
    const KilnResult r = run_kiln(c.args);
    INFO("stderr: ", r.err);
    CHECK(r.status == c.status);
    CHECK(contains(r.err, c.message));
    CHECK(r.out.empty());
  }
  CHECK(!fs::exists(out));
  CHECK(!fs::exists(dir.file("no")));
}
