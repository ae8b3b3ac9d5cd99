// kiln export --model transformer: the files it writes and the flags it refuses.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "side_files.h"
#include "cli/run_kiln.h"
#include "engine/interpreter.h"
#include "engine/ir/printer.h"
#include "engine/npy.h"
#include "models/transformer/decoder_step.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::vector<std::string> kTinyFlags = {"export", "--model", "transformer", "--config",  "tiny", "--vocab",
                                             "16",     "--batch", "2",           "--src-len", "5",    "--tgt-len",
                                             "5"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST_CASE("kiln export writes the five graphs, which kiln check prints back unchanged") {
  TempDir dir;
  const std::string out = dir.file("tiny");
  const KilnResult r = run_kiln(with(kTinyFlags, {"-o", out}));
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  const models::TransformerConfig cfg = test::tiny_config(16, 0.1);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  const std::map<std::string, Graph> expected = {{"train_step.kir", models::build_train_graph(cfg, 2, 5, 5, adam)},
                                                 {"loss.kir", models::build_loss_graph(cfg, 2, 5, 5, false)},
                                                 {"encoder.kir", models::build_encoder_graph(cfg, 2, 5)},
                                                 {"decoder.kir", models::build_decoder_graph(cfg, 2, 5, 5)},
                                                 {"decoder_step.kir", models::build_decoder_step_graph(cfg, 2, 5, 5)}};
  for (const auto& [name, g] : expected) {
    INFO(name);
    const std::string text = read_file(fs::path(out) / name);
    CHECK(text == print_kir(g));
    const KilnResult check = run_kiln({"check", (fs::path(out) / name).string()});
    CHECK(check.status == 0);
    CHECK(check.out == text);
  }
  CHECK(side_files((fs::path(out) / "train_step.kir").string()).empty());
}

TEST_CASE("kiln run and kiln compile accept the exported graphs") {
  TempDir dir;
  const std::string out = dir.file("tiny");
  REQUIRE(run_kiln(with(kTinyFlags, {"-o", out, "--dropout", "0"})).status == 0);
  const test::TokenBatch batch = test::sample_batch(5);
  save_npy(dir.file("src.npy"), batch.src);
  save_npy(dir.file("tgt_in.npy"), batch.tgt_in);
  save_npy(dir.file("tgt_out.npy"), batch.tgt_out);
  const KilnResult run =
      run_kiln({"run", (fs::path(out) / "loss.kir").string(), "--backend", "interp", "--seed", "3", "--input",
                "src=" + dir.file("src.npy"), "--input", "tgt_in=" + dir.file("tgt_in.npy"), "--input",
                "tgt_out=" + dir.file("tgt_out.npy"), "--output-dir", dir.file("run")});
  REQUIRE(run.status == 0);
  // The same loss as the graph built in-process with the same seed.
  Interpreter exe(models::build_loss_graph(test::tiny_config(16, 0.0), 2, 5, 5, false));
  test::bind_batch(exe, batch);
  bind_initial_values(exe, 3);
  exe.run();
  CHECK(load_npy(dir.file("run/loss.npy")).f32()() == exe.output("loss").f32()());

  const KilnResult compile =
      run_kiln({"compile", (fs::path(out) / "encoder.kir").string(), "--emit", "obj", "-o", dir.file("encoder.o")});
  CHECK(compile.status == 0);
  CHECK(fs::file_size(dir.file("encoder.o")) > 0);
}

TEST_CASE("kiln export refuses bad flags naming the flag and writes nothing") {
  TempDir dir;
  const std::string out = dir.file("never");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"export", "--config", "huge", "--batch", "2", "--src-len", "5", "--tgt-len", "5", "-o", out}, "--config"},
      {{"export", "--model", "lstm", "--config", "tiny", "--batch", "2", "--src-len", "5", "--tgt-len", "5", "-o", out},
       "--model"},
      {{"export", "--config", "tiny", "--batch", "0", "--src-len", "5", "--tgt-len", "5", "-o", out}, "--batch"},
      {{"export", "--config", "tiny", "--batch", "2", "--src-len", "5", "--tgt-len", "5"}, "--output"},
      {{"export", "--config", "tiny", "--batch", "2", "--src-len", "300", "--tgt-len", "5", "-o", out}, "--src-len"},
      {{"export", "--config", "tiny", "--batch", "2", "--src-len", "4", "--tgt-len", "5", "--max-len", "4", "-o", out},
       "--tgt-len"},
      {{"export", "--config", "tiny", "--batch", "2", "--src-len", "5", "--tgt-len", "5", "--vocab", "3", "-o", out},
       "--vocab"},
      {{"export", "--config", "tiny", "--batch", "2", "--src-len", "5", "--tgt-len", "5", "--dropout", "1", "-o", out},
       "--dropout"},
      {{"export", "--config", "tiny", "--batch", "x", "--src-len", "5", "--tgt-len", "5", "-o", out}, "--batch"},
  };
  for (const auto& [args, flag] : cases) {
    const KilnResult r = run_kiln(args);
    INFO(r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(flag) != std::string::npos);
    CHECK_FALSE(fs::exists(out));
  }
}

TEST_CASE("kiln export into a path that cannot be a directory fails without writing") {
  TempDir dir;
  const std::string file = dir.file("a_file");
  std::ofstream(file) << "keep";
  const KilnResult r = run_kiln(with(kTinyFlags, {"-o", file + "/sub"}));
  CHECK(r.status == 2);  // a flag error, before any graph is built
  CHECK(r.err.find("--output: cannot create " + file + "/sub: " + file + " is not a directory") != std::string::npos);
  CHECK(read_file(file) == "keep");
}
