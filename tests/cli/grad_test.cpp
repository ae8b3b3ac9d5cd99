// kiln grad, kiln train-graph, and kiln run --steps/--save/--load.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/run_kiln.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/npy.h"
#include "text_and_files.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kMlpInputs = {"--input", "x=" + source_path("examples/inputs/mlp/x.npy"), "--input",
                                             "labels=" + source_path("examples/inputs/mlp/labels.npy")};

// The loss printed on each "step N: loss=..." line of kiln run --steps.
std::vector<float> step_losses(const std::string& out) {
  std::vector<float> losses;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("loss=");
    if (line.rfind("step ", 0) == 0 && at != std::string::npos) losses.push_back(std::stof(line.substr(at + 5)));
  }
  return losses;
}

}  // namespace

TEST_CASE("kiln grad prints a joint graph with NAME.grad outputs that reparses") {
  const KilnResult r = run_kiln({"grad", source_path("examples/mlp.kir"), "--loss", "loss", "--wrt", "w1,b2"});
  REQUIRE(r.status == 0);
  CHECK(r.out.find("output %w1.grad") != std::string::npos);
  CHECK(r.out.find("output %b2.grad") != std::string::npos);
  CHECK(print_kir(parse_kir(r.out, "joint.kir")) == r.out);
}

TEST_CASE("kiln grad -o writes the file") {
  TempDir dir;
  const std::string out = dir.file("joint.kir");
  const KilnResult r = run_kiln({"grad", source_path("examples/mlp.kir"), "--loss", "loss", "--wrt", "w2", "-o", out});
  REQUIRE(r.status == 0);
  CHECK(r.out.empty());
  CHECK(read_file(out).find("output %w2.grad") != std::string::npos);
}

TEST_CASE("kiln grad rejects bad names and types with the flag named") {
  TempDir dir;
  const std::string out = dir.file("keep.kir");
  std::ofstream(out) << "precious";
  const std::string mlp = source_path("examples/mlp.kir");
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"grad", mlp, "--loss", "nope", "--wrt", "w1", "-o", out}, 1, "--loss nope: graph @mlp has no value named"},
      {{"grad", mlp, "--loss", "loss", "--wrt", "w1,zz", "-o", out}, 1, "--wrt zz"},
      {{"grad", mlp, "--loss", "loss", "--wrt", "labels", "-o", out}, 1, "only f32 values have gradients"},
      {{"grad", mlp, "--loss", "logits", "--wrt", "w1", "-o", out}, 1, "must be an f32 scalar"},
      {{"grad", mlp, "--wrt", "w1"}, 2, "--loss is required"},
      {{"grad", source_path("examples/missing.kir"), "--loss", "loss", "--wrt", "w1"}, 1, "cannot read"},
  };
  for (const Case& c : cases) {
    const KilnResult r = run_kiln(c.args);
    INFO("stderr: ", r.err);
    CHECK(r.status == c.status);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
  CHECK(read_file(out) == "precious");
  CHECK(!fs::exists(out + ".tmp"));
}

TEST_CASE("kiln train-graph writes a step that kiln run trains with --steps") {
  TempDir dir;
  for (const auto& [optimizer, lr] : {std::pair<std::string, std::string>{"adam", "0.05"}, {"sgd", "0.5"}}) {
    INFO("optimizer ", optimizer);
    const std::string step = dir.file(optimizer + ".kir");
    const KilnResult made = run_kiln({"train-graph", source_path("examples/mlp.kir"), "--loss", "loss",
                                      "--optimizer", optimizer, "--lr", lr, "-o", step});
    REQUIRE(made.status == 0);
    std::vector<std::string> args = {"run", step, "--steps", "30", "--output-dir", dir.file("out")};
    args.insert(args.end(), kMlpInputs.begin(), kMlpInputs.end());
    const KilnResult trained = run_kiln(args);
    REQUIRE(trained.status == 0);
    const std::vector<float> losses = step_losses(trained.out);
    REQUIRE(losses.size() == 30);
    CHECK(losses.back() < losses.front() * 0.5f);
  }
}

TEST_CASE("kiln run --save and --load continue the same trajectory") {
  TempDir dir;
  const std::string step = dir.file("train.kir");
  REQUIRE(run_kiln({"train-graph", source_path("examples/mlp.kir"), "--loss", "loss", "--lr", "0.01", "-o", step})
              .status == 0);
  auto run_steps = [&](const std::string& steps, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", step, "--steps", steps, "--output-dir", dir.file("out")};
    args.insert(args.end(), kMlpInputs.begin(), kMlpInputs.end());
    args.insert(args.end(), extra.begin(), extra.end());
    const KilnResult r = run_kiln(args);
    REQUIRE(r.status == 0);
    return step_losses(r.out);
  };
  const std::vector<float> straight = run_steps("6", {});
  const std::vector<float> first = run_steps("3", {"--save", dir.file("ckpt")});
  CHECK(load_npy(dir.file("ckpt/step.npy")).i32()() == 3);
  const std::vector<float> second = run_steps("3", {"--load", dir.file("ckpt")});
  REQUIRE(straight.size() == 6);
  REQUIRE(second.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(first[i] == straight[i]);
    CHECK(second[i] == straight[i + 3]);
  }
}

TEST_CASE("kiln train-graph and run reject bad flags") {
  const std::string mlp = source_path("examples/mlp.kir");
  struct Case {
    std::vector<std::string> args;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"train-graph", mlp, "--loss", "loss", "--optimizer", "adagrad", "-o", "/tmp/x.kir"}, 2, "--optimizer"},
      {{"train-graph", mlp, "--loss", "loss"}, 2, "--output is required"},
      {{"train-graph", mlp, "--loss", "loss", "--lr", "-1", "-o", "/tmp/x.kir"}, 2, "--lr"},
      {{"run", mlp, "--steps", "0"}, 2, "--steps"},
      {{"run", mlp, "--load", "/nonexistent/dir"}, 2, "--load"},
  };
  for (const Case& c : cases) {
    const KilnResult r = run_kiln(c.args);
    INFO("stderr: ", r.err);
    CHECK(r.status == c.status);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
}
