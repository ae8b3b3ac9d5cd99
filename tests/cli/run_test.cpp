#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <xtensor/xbuilder.hpp>

#include "cli/run_kiln.h"
#include "engine/npy.h"

using namespace kiln;
using doctest::Approx;
namespace fs = std::filesystem;

namespace {

// --input NAME=PATH for every examples/inputs/EXAMPLE/NAME.npy.
std::vector<std::string> example_inputs(const std::string& example) {
  std::vector<std::string> args;
  for (const auto& entry : fs::directory_iterator(source_path("examples/inputs/" + example))) {
    args.push_back("--input");
    args.push_back(entry.path().stem().string() + "=" + entry.path().string());
  }
  return args;
}

std::vector<std::string> mlp_run(const std::string& out_dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run", source_path("examples/mlp.kir"), "--output-dir", out_dir};
  for (std::string& a : example_inputs("mlp")) args.push_back(std::move(a));
  for (std::string& a : extra) args.push_back(std::move(a));
  return args;
}

// Saves `t` as DIR/NAME.npy and returns the path.
std::string npy_file(const TempDir& dir, const std::string& name, const Tensor& t) {
  const std::string path = dir.file(name + ".npy");
  save_npy(path, t);
  return path;
}

}  // namespace

TEST_CASE("kiln run writes every output as DIR/NAME.npy and prints one line per output") {
  TempDir dir;
  const std::string out = dir.file("out");
  const KilnResult r = run_kiln(mlp_run(out));
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  const Tensor loss = load_npy(out + "/loss.npy");
  const Tensor logits = load_npy(out + "/logits.npy");
  CHECK(loss.type() == TensorType{DType::f32, {}});
  CHECK(logits.type() == TensorType{DType::f32, {8, 4}});
  const std::string loss_line = "%loss : f32[] = ";
  REQUIRE(r.out.rfind(loss_line, 0) == 0);
  CHECK(std::stof(r.out.substr(loss_line.size())) == loss.f32()());
  CHECK(r.out.find(" -> " + out + "/loss.npy\n%logits : f32[8,4] -> " + out + "/logits.npy\n") != std::string::npos);
}

TEST_CASE("kiln run binds params from files: the mlp loss with hand-computed values") {
  TempDir dir;
  const auto zeros = [](Shape s) { return Tensor::zeros({DType::f32, std::move(s)}); };
  std::vector<std::string> params = {
      "--input", "w1=" + npy_file(dir, "w1", zeros({16, 32})),
      "--input", "b1=" + npy_file(dir, "b1", zeros({32})),
      "--input", "w2=" + npy_file(dir, "w2", zeros({32, 4})),
  };
  {
    // Every logit 0: each example's loss is ln 4.
    auto args = mlp_run(dir.file("out0"), params);
    args.insert(args.end(), {"--input", "b2=" + npy_file(dir, "b2", zeros({4}))});
    const KilnResult r = run_kiln(args);
    REQUIRE(r.status == 0);
    CHECK(load_npy(dir.file("out0/loss.npy")).f32()() == Approx(1.3862943611198906));
  }
  {
    // Logits (1, 0, 0, 0) for every example: -log softmax is ln(e + 3) - 1 for
    // class 0 (2 of the 8 labels) and ln(e + 3) otherwise; the mean is ln(e + 3) - 1/4.
    auto args = mlp_run(dir.file("out1"), params);
    args.insert(args.end(), {"--input", "b2=" + npy_file(dir, "b2", Tensor(Tensor::F32{1.0f, 0.0f, 0.0f, 0.0f}))});
    const KilnResult r = run_kiln(args);
    REQUIRE(r.status == 0);
    CHECK(load_npy(dir.file("out1/loss.npy")).f32()() == Approx(1.493668380628679));
  }
}

TEST_CASE("kiln run initializes unbound params from --seed, deterministically") {
  TempDir dir;
  const auto logits = [&](const std::string& seed) {
    const std::string out = dir.file("out" + seed);
    REQUIRE(run_kiln(mlp_run(out, {"--seed", seed})).status == 0);
    return load_npy(out + "/logits.npy").f32();
  };
  const Tensor::F32 first = logits("1");
  CHECK(logits("1") == first);
  CHECK(logits("2") != first);
}

TEST_CASE("kiln run runs every example on its inputs") {
  TempDir dir;
  for (const std::string name : {"mlp", "softmax_classifier", "attention"}) {
    CAPTURE(name);
    std::vector<std::string> args = {"run", source_path("examples/") + name + ".kir", "-o", dir.file(name)};
    for (std::string& a : example_inputs(name)) args.push_back(std::move(a));
    const KilnResult r = run_kiln(args);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(!r.out.empty());
  }
}

TEST_CASE("kiln run rejects bad bindings, files and flags with a clear message and writes nothing") {
  TempDir dir;
  const std::string x = source_path("examples/inputs/mlp/x.npy");
  const std::string labels = source_path("examples/inputs/mlp/labels.npy");
  const std::string x_i32 = "x=" + npy_file(dir, "x_i32", Tensor::zeros({DType::i32, {8, 16}}));
  const std::string x_short = "x=" + npy_file(dir, "x_short", Tensor::zeros({DType::f32, {8, 15}}));
  const std::string bad_labels = "labels=" + npy_file(dir, "bad_labels", Tensor(Tensor::I32{0, 1, 2, 7, 1, 2, 3, 0}));
  const std::string truncated = dir.file("truncated.npy");
  save_npy(truncated, Tensor::zeros({DType::f32, {8, 16}}));
  fs::resize_file(truncated, 200);  // the header and part of the data

  const struct {
    std::string what;
    std::vector<std::string> args;
    int status;
    std::string message;
  } cases[] = {
      {"missing input file", {"-i", "x=/nonexistent/x.npy", "-i", "labels=" + labels}, 1,
       "kiln: error: /nonexistent/x.npy: cannot open: No such file or directory\n"},
      {"wrong dtype", {"-i", x_i32, "-i", "labels=" + labels}, 1,
       "kiln: error: --input " + x_i32 + ": input %x is f32[8,16], got a tensor of i32[8,16]\n"},
      {"wrong shape", {"-i", x_short, "-i", "labels=" + labels}, 1,
       "input %x is f32[8,16], got a tensor of f32[8,15]\n"},
      {"corrupt file", {"-i", "x=" + truncated, "-i", "labels=" + labels}, 1,
       "kiln: error: " + truncated + ": truncated data"},
      {"unknown name", {"-i", "x=" + x, "-i", "labels=" + labels, "-i", "y=" + x}, 1,
       "kiln: error: --input y=" + x + ": graph @mlp declares no input, param or state named 'y'\n"},
      {"a result's name", {"-i", "x=" + x, "-i", "labels=" + labels, "-i", "logits=" + x}, 1,
       "declares no input, param or state named 'logits'"},
      {"unbound input", {"-i", "x=" + x}, 1, "kiln: error: input %labels not bound (pass --input NAME=FILE.npy)\n"},
      {"repeated input", {"-i", "x=" + x, "-i", "labels=" + labels, "-i", "x=" + x}, 1,
       "kiln: error: --input x is given twice\n"},
      {"label out of range", {"-i", "x=" + x, "-i", bad_labels}, 1, "cross_entropy: label 7"},
      {"no '='", {"-i", x, "-i", "labels=" + labels}, 2, "kiln: error: --input: '" + x + "' is not NAME=PATH.npy"},
      {"empty name", {"-i", "=" + x, "-i", "labels=" + labels}, 2, "is not NAME=PATH.npy"},
      {"empty path", {"-i", "x=", "-i", "labels=" + labels}, 2, "is not NAME=PATH.npy"},
      {"unknown flag", {"--frobnicate"}, 2, "kiln: error: "},
      {"unknown backend", {"-i", "x=" + x, "-i", "labels=" + labels, "--backend", "gpu"}, 2, "--backend"},
      {"bad seed", {"--seed", "abc"}, 2, "--seed"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    const std::string out = dir.file("out");
    std::vector<std::string> args = {"run", source_path("examples/mlp.kir"), "-o", out};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const KilnResult r = run_kiln(args);
    CHECK(r.status == c.status);
    CHECK(r.out.empty());
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(r.err.rfind("kiln: error: ", 0) == 0);
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("kiln run names a missing .kir file and an output dir that cannot be created") {
  TempDir dir;
  const KilnResult missing = run_kiln({"run", "/nonexistent/g.kir", "-o", dir.file("out")});
  CHECK(missing.status == 1);
  CHECK(missing.err.find("cannot read /nonexistent/g.kir") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.file("out")));

  const std::string file = dir.file("a_file");
  save_npy(file, Tensor::scalar(0.0f));
  const KilnResult blocked = run_kiln(mlp_run(file + "/out"));
  CHECK(blocked.status == 2);
  CHECK(blocked.err.rfind("kiln: error: --output-dir: cannot create " + file + "/out: " + file + " is not a directory",
                          0) == 0);
}

TEST_CASE("kiln run refuses declared shapes beyond the machine's memory, naming the declaration and its bytes") {
  TempDir dir;
  const std::string kir = dir.file("huge.kir");
  std::ofstream(kir) << "graph @huge {\n  param %w : f32[100000,100000,100]\n  %y = neg(%w)\n  output %y\n}\n";
  for (const char* backend : {"interp", "jit"}) {
    CAPTURE(backend);
    const KilnResult r = run_kiln({"run", kir, "--backend", backend, "-o", dir.file("out")});
    CHECK(r.status == 1);
    CHECK_MESSAGE(r.err.find("param %w: f32[100000,100000,100] needs 4000000000000 bytes (3725.3 GiB), more than") !=
                      std::string::npos,
                  r.err);
  }
}

TEST_CASE("kiln run given an endless file as the graph ends with an error naming it, fast") {
  const KilnResult r = run_kiln({"run", "/dev/zero"});
  CHECK(r.status == 1);
  CHECK(r.err == "kiln: error: /dev/zero: larger than the 64 MiB limit for a .kir file\n");
}
