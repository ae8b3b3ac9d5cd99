#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/run_kiln.h"

namespace fs = std::filesystem;

namespace {

const char* const kExamples[] = {"mlp", "softmax_classifier", "attention"};

std::string first_line_value(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return line.substr(key.size());
  return {};
}

}  // namespace

TEST_CASE("kiln --version names kiln, LLVM and the host CPU") {
  const KilnResult r = run_kiln({"--version"});
  CHECK(r.status == 0);
  CHECK(r.out.rfind("kiln 0.", 0) == 0);
  CHECK(r.out.find("LLVM 19.") != std::string::npos);
  CHECK(r.out.find("host CPU ") != std::string::npos);
}

TEST_CASE("kiln --help lists the subcommands, and each has its own help") {
  const KilnResult r = run_kiln({"--help"});
  CHECK(r.status == 0);
  for (const char* cmd : {"check", "run", "dot", "ops"}) CHECK(r.out.find(cmd) != std::string::npos);
  const KilnResult run = run_kiln({"run", "--help"});
  CHECK(run.status == 0);
  CHECK(run.out.find("--input") != std::string::npos);
  CHECK(run.out.find("--seed") != std::string::npos);
}

TEST_CASE("kiln without a subcommand or with an unknown flag is a usage error (exit 2)") {
  const KilnResult none = run_kiln({});
  CHECK(none.status == 2);
  CHECK(none.err.rfind("kiln: error: ", 0) == 0);
  const KilnResult flag = run_kiln({"check", "--frobnicate", source_path("examples/mlp.kir")});
  CHECK(flag.status == 2);
  CHECK(flag.err.rfind("kiln: error: ", 0) == 0);
  CHECK(flag.err.find("--frobnicate") != std::string::npos);
}

TEST_CASE("kiln check accepts every example and prints text that reads back to itself") {
  TempDir dir;
  for (const std::string name : kExamples) {
    CAPTURE(name);
    const KilnResult r = run_kiln({"check", source_path("examples/") + name + ".kir"});
    REQUIRE(r.status == 0);
    CHECK(r.err.empty());
    CHECK(r.out.rfind("graph @" + name + " {\n", 0) == 0);
    const std::string printed = dir.file(name + ".kir");
    std::ofstream(printed) << r.out;
    const KilnResult again = run_kiln({"check", printed});
    CHECK(again.status == 0);
    CHECK(again.out == r.out);
  }
}

TEST_CASE("kiln check rejects every file of tests/kir_bad with FILE:LINE:COL: error:") {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(source_path("tests/kir_bad"))) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".kir") continue;
    ++files;
    CAPTURE(path);
    const std::string expect = first_line_value(path, "# expect: ");
    const std::string at = first_line_value(path, "# at: ");
    REQUIRE(!expect.empty());
    const KilnResult r = run_kiln({"check", path});
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    const std::string location = at.empty() ? path + ":" : path + ":" + at + ": error: ";
    CHECK(r.err.rfind(location, 0) == 0);
    CHECK(r.err.find(": error: ") != std::string::npos);
    CHECK(r.err.find(expect) != std::string::npos);
  }
  CHECK(files > 0);
}

TEST_CASE("kiln check and kiln dot name a missing file") {
  for (const char* cmd : {"check", "dot"}) {
    const KilnResult r = run_kiln({cmd, "/nonexistent/graph.kir"});
    CHECK(r.status == 1);
    CHECK(r.err.find("cannot read /nonexistent/graph.kir") != std::string::npos);
  }
}

TEST_CASE("kiln dot prints a Graphviz digraph with every value of the graph") {
  const KilnResult r = run_kiln({"dot", source_path("examples/mlp.kir")});
  CHECK(r.status == 0);
  CHECK(r.out.find("digraph") != std::string::npos);
  for (const char* name : {"x", "labels", "w1", "logits", "loss"}) CHECK(r.out.find(name) != std::string::npos);
  CHECK(r.out.find("cross_entropy") != std::string::npos);
}

TEST_CASE("kiln dot --fuse and --color-by draw the compiled graph's fusions as clusters, coloured") {
  const std::string mlp = source_path("examples/mlp.kir");
  const KilnResult fused = run_kiln({"dot", mlp, "--fuse"});
  CHECK(fused.status == 0);
  CHECK(fused.out.find("subgraph cluster_") != std::string::npos);
  CHECK(fused.out.find("fusion {hero=0, kind=\\\"epilogue\\\"}") != std::string::npos);

  const KilnResult buffers = run_kiln({"dot", mlp, "--color-by", "buffer"});
  CHECK(buffers.status == 0);
  CHECK(buffers.out.find("arena @") != std::string::npos);
  CHECK(buffers.out.find("output %loss") != std::string::npos);

  const KilnResult time = run_kiln({"dot", mlp, "--color-by", "time"});
  INFO(time.err);
  CHECK(time.status == 0);
  CHECK(time.out.find(" ms (") != std::string::npos);
  CHECK(time.out.find("fillcolor=\"#ff") != std::string::npos);

  // Graphviz reads it (where Debian's graphviz is installed).
  if (std::system("command -v dot > /dev/null 2>&1") == 0) {
    TempDir tmp;
    {
      std::ofstream(tmp.file("g.dot")) << time.out;
    }
    const std::string cmd = "dot -Tsvg " + shell_quote(tmp.file("g.dot")) + " -o " + shell_quote(tmp.file("g.svg"));
    CHECK(std::system(cmd.c_str()) == 0);
    std::ifstream svg(tmp.file("g.svg"));
    std::string first;
    std::getline(svg, first);
    CHECK(first.find("<?xml") == 0);
  } else {
    MESSAGE("graphviz's dot is not installed: the SVG check is skipped");
  }

  const KilnResult bad = run_kiln({"dot", mlp, "--color-by", "colour"});
  CHECK(bad.status != 0);
  CHECK(bad.err.find("--color-by") != std::string::npos);
}

TEST_CASE("kiln ops lists ops with their attributes and summaries") {
  const KilnResult r = run_kiln({"ops"});
  CHECK(r.status == 0);
  CHECK(r.out.find("matmul (2 operands) {transpose_a: bool = false, transpose_b: bool = false}\n    ") !=
        std::string::npos);
  CHECK(r.out.find("concat (1+ operands)") != std::string::npos);
  CHECK(r.out.find("add (2 operands)\n") != std::string::npos);
}
