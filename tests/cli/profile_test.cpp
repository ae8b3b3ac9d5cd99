// `kiln profile`: the kernel table, the Chrome trace, and bad input.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/run_kiln.h"

namespace fs = std::filesystem;

TEST_CASE("kiln profile prints a row per kernel with its limit and writes a Chrome trace with a track per thread") {
  TempDir tmp;
  const std::string trace = tmp.file("mlp.trace.json");
  const KilnResult r = run_kiln({"profile", source_path("examples/mlp.kir"), "--steps", "3", "--threads", "2",
                                 "--trace", trace, "--no-cache"});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("kernel time per step") != std::string::npos);
  CHECK(r.out.find("(mean of 3 runs, 2 thread(s))") != std::string::npos);
  CHECK(r.out.find("nearer limit") != std::string::npos);
  CHECK(r.out.find("matmul") != std::string::npos);
  CHECK((r.out.find("compute ") != std::string::npos || r.out.find("memory ") != std::string::npos));
  std::ifstream in(trace);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::set<std::string> tracks;
  int calls = 0;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "M") tracks.insert(e.at("args").at("name").get<std::string>());
    if (e.at("ph") == "X" && e.contains("args")) ++calls;  // kernel calls carry their cost
  }
  CHECK(tracks.count("thread 0 (the caller)") == 1);
  CHECK(calls % 3 == 0);
  CHECK(calls > 0);
}

TEST_CASE("kiln profile --by scope gives each model part its forward and backward time; --depth groups them") {
  TempDir tmp;
  const std::string kir = tmp.file("scoped.kir");
  std::ofstream(kir) << R"kir(graph @scoped {
  input %x : f32[64,64]
  param %w : f32[64,64]
  %h = matmul(%x, %w) : f32[64,64] loc("enc.0.ffn")
  %r = relu(%h) : f32[64,64] loc("enc.0.ffn")
  %g = matmul(%r, %w) {transpose_b=true} : f32[64,64] loc("enc.0.ffn (backward)")
  %k = matmul(%g, %w) : f32[64,64] loc("enc.1.ffn")
  %n = neg(%k) : f32[64,64]
  output %n
}
)kir";
  const auto profile = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"profile", kir, "--steps", "2", "--threads", "1", "--trace", tmp.file("t.json"),
                                  "--no-cache"};
    args.insert(args.end(), extra.begin(), extra.end());
    const KilnResult r = run_kiln(args);
    INFO(r.err);
    REQUIRE(r.status == 0);
    return r.out;
  };
  const std::string whole = profile({"--by", "scope"});
  INFO(whole);
  CHECK(whole.find("kernel time per step by model scope") != std::string::npos);
  CHECK(whole.find("forward ms") != std::string::npos);
  CHECK(whole.find("backward ms") != std::string::npos);
  for (const char* row : {"\n  enc.0.ffn ", "\n  enc.1.ffn ", "\n  all "})
    CHECK_MESSAGE(whole.find(row) != std::string::npos, row);
  CHECK(whole.find("(backward)") == std::string::npos);  // a column, not a row of its own
  const std::string layers = profile({"--by", "scope", "--depth", "2"});
  INFO(layers);
  CHECK(layers.find("\n  enc.0 ") != std::string::npos);
  CHECK(layers.find("enc.0.ffn") == std::string::npos);
  // The table by kernel names each kernel's model part too.
  const std::string by_kernel = profile({"--by", "kernel"});
  INFO(by_kernel);
  CHECK(by_kernel.find(" scope ") != std::string::npos);
  CHECK(by_kernel.find(" enc.0.ffn (backward) ") != std::string::npos);
  CHECK(by_kernel.find(" enc (2 scopes) ") != std::string::npos);  // one row for the two alike kernels
  const KilnResult bad = run_kiln({"profile", kir, "--by", "layer", "--trace", tmp.file("u.json")});
  CHECK(bad.status != 0);
  CHECK(bad.err.find("--by") != std::string::npos);
}

TEST_CASE("kiln profile refuses bad input, naming it, and writes no trace") {
  TempDir tmp;
  const std::string trace = tmp.file("t.json");
  const auto fails = [&](std::vector<std::string> args, const std::string& says) {
    args.insert(args.end(), {"--trace", trace});
    const KilnResult r = run_kiln(args);
    INFO(r.err);
    CHECK(r.status != 0);
    CHECK(r.err.find(says) != std::string::npos);
    CHECK(!fs::exists(trace));
  };
  fails({"profile", tmp.file("missing.kir")}, "missing.kir");
  fails({"profile", source_path("examples/mlp.kir"), "--steps", "0"}, "--steps");
  fails({"profile", source_path("examples/mlp.kir"), "--threads", "-1"}, "--threads");
  fails({"profile", source_path("examples/mlp.kir"), "--input", "nope=x.npy"}, "declares no input, param or state named 'nope'");
  fails({"profile", source_path("examples/mlp.kir"), "--input", "x=" + tmp.file("none.npy")}, "none.npy");
  fails({"profile", source_path("examples/mlp.kir"), "--passes", "nosuchpass"}, "nosuchpass");
  const KilnResult r = run_kiln({"profile", source_path("examples/mlp.kir"), "--trace", tmp.file("no/dir/t.json")});
  CHECK(r.status != 0);
  CHECK(r.err.find("no/dir/t.json") != std::string::npos);
}
