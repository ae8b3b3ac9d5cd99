// --dump-dir's page (compiler/report/): DIR/index.html and each graph's data
// scripts, read here as the page reads them (tests/browser/ opens the page).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/run_kiln.h"
#include "cli/temp_dir.h"
#include "text_and_files.h"

namespace {

namespace fs = std::filesystem;

// A page script "kilnPage.CALL(ARGS...);\n": its last argument, the JSON.
nlohmann::json script_data(const std::string& path) {
  const std::string text = read_file(path);
  const size_t open = text.find('{');
  const size_t close = text.rfind(')');
  REQUIRE(open != std::string::npos);
  REQUIRE(close != std::string::npos);
  return nlohmann::json::parse(text.substr(open, close - open));
}

}  // namespace

TEST_CASE("kiln compile --dump-dir writes the page: every stage, the remarks, the program and each kernel's code") {
  TempDir dir;
  const KilnResult r = run_kiln({"compile", source_path("examples/attention.kir"), "--emit", "asm", "-o",
                                 dir.file("a.s"), "--dump-dir", dir.file("dump")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string index = read_file(dir.file("dump/index.html"));
  CHECK(contains(index, "window.kilnGraphs = [\"attention\"];"));
  CHECK(!contains(index, "/*KILN_"));  // every marker filled

  const nlohmann::json graph = script_data(dir.file("dump/attention/page-data.js"));
  CHECK(graph["name"] == "attention");
  const nlohmann::json& stages = graph["stages"];
  REQUIRE(stages.size() == 13);  // the input and the default pipeline's 12 passes
  CHECK(stages[0]["file"] == "00-input.kir");
  CHECK(stages[10]["pass"] == "fusion");
  CHECK(stages[10]["changed"] == true);
  CHECK(stages[10]["nodes_before"] == 12);
  CHECK(stages[10]["nodes_after"] == 11);
  CHECK(stages[11]["changed"] == false);
  CHECK(stages[11]["same"] == 10);  // its text is the stage before's, stored once
  // The fusion of the residual add into the layer norm: a node with its body, its
  // results' types and its .kir text; its body's first op reads the fusion's
  // operands, by reference to what makes them.
  const nlohmann::json* fusion = nullptr;
  for (const nlohmann::json& n : stages[10]["nodes"])
    if (n["op"] == "fusion") fusion = &n;
  REQUIRE(fusion != nullptr);
  CHECK((*fusion)["kind"] == "input");
  CHECK((*fusion)["outs"][0] == nlohmann::json({"y", "f32[2,8,16]"}));
  CHECK((*fusion)["body"][0]["op"] == "add");
  CHECK((*fusion)["body"][0]["ins"][0] == nlohmann::json({"d:x", "x"}));
  // Where it was written: one of the ops it fused (the add or the layer norm), in
  // the .kir compiled (passes.json carries it; the printed stages do not).
  const std::string source = (*fusion)["source"];
  CHECK((contains(source, "examples/attention.kir:45:") || contains(source, "examples/attention.kir:46:")));
  const std::string text = graph["texts"][(*fusion)["text"].get<size_t>()];
  CHECK(text.rfind("%y, %y_mean, %y_rstd = fusion(%x, %proj, %gamma, %beta) {hero=1, kind=\"input\"}", 0) == 0);
  bool remark = false;
  for (const nlohmann::json& m : graph["remarks"])
    remark = remark || (m["stage"] == 10 && contains(m["text"], "not fused: %proj (matmul") && contains(m["text"], "into %y (layer_norm"));
  CHECK(remark);

  // The program: each call's node and kernel, each arena buffer's place and life.
  const nlohmann::json& program = graph["program"];
  CHECK(program["calls"].size() == 11);
  CHECK(program["kernels"].size() == 5);
  CHECK(program["arena_bytes"] == 4352);
  bool proj = false;
  for (const nlohmann::json& b : program["buffers"])
    if (b["name"] == "proj") {
      proj = true;
      CHECK(b["offset"] == 0);
      CHECK(b["first"] == 9);
      CHECK(b["last"] == 10);
    }
  CHECK(proj);
  CHECK(!graph.contains("profile"));
  for (size_t k = 0; k < 5; ++k) {
    const nlohmann::json code = script_data(dir.file("dump/attention/page-kernels/k" + std::to_string(k) + ".js"));
    CHECK(contains(code["s"], "kiln_k"));
    CHECK(contains(code["opt.ll"], " void @kiln_k"));
  }
}

TEST_CASE("the page's nodes carry their scopes and .kir places, a fusion the scopes of all its ops") {
  TempDir dir;
  const std::string graph_path = dir.file("g.kir");
  write_file(graph_path, R"(graph @g {
  input %x : f32[2,4]
  %y = neg(%x) : f32[2,4] loc("enc.0.ffn")
  %z = exp(%y) : f32[2,4] loc("enc.0.ln2")
  output %z
}
)");
  const KilnResult r = run_kiln({"compile", graph_path, "--emit", "asm", "-o", dir.file("g.s"), "--dump-dir",
                                 dir.file("dump")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json graph = script_data(dir.file("dump/g/page-data.js"));
  const nlohmann::json& input = graph["stages"][0]["nodes"];
  CHECK(input[0]["scopes"] == nlohmann::json({"enc.0.ffn"}));
  CHECK(input[0]["source"] == graph_path + ":3:8");
  REQUIRE(graph["stages"][10]["pass"] == "fusion");
  const nlohmann::json& fused = graph["stages"][10]["nodes"][0];
  CHECK(fused["op"] == "fusion");
  CHECK(fused["scopes"] == nlohmann::json({"enc.0.ffn", "enc.0.ln2"}));
  CHECK(fused["body"][0]["scopes"] == nlohmann::json({"enc.0.ffn"}));
}

TEST_CASE("kiln profile --dump-dir records each call's time into the page") {
  TempDir dir;
  const KilnResult r = run_kiln({"profile", source_path("examples/attention.kir"), "--steps", "3", "--trace",
                                 dir.file("t.json"), "--dump-dir", dir.file("dump")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json graph = script_data(dir.file("dump/attention/page-data.js"));
  REQUIRE(graph.contains("profile"));
  CHECK(graph["profile"]["runs"] == 3);
  REQUIRE(graph["profile"]["call_ms"].size() == graph["program"]["calls"].size());
  double total = 0;
  for (const nlohmann::json& ms : graph["profile"]["call_ms"]) total += ms.get<double>();
  CHECK(total > 0);
}

TEST_CASE("kiln opt --dump-dir writes the page of the passes alone") {
  TempDir dir;
  const KilnResult r = run_kiln({"opt", source_path("examples/attention.kir"), "-o", dir.file("o.kir"), "--passes",
                                 "cse,dce", "--dump-dir", dir.file("dump")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const nlohmann::json graph = script_data(dir.file("dump/attention/page-data.js"));
  REQUIRE(graph["stages"].size() == 3);
  CHECK(graph["stages"][2]["file"] == "02-dce.kir");
  CHECK(!graph.contains("program"));
  CHECK(fs::exists(dir.file("dump/index.html")));
}
