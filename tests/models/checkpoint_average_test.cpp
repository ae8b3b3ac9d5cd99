// Checkpoint averaging: params are the element-wise mean, the rest is the last
// checkpoint's; checkpoints of different models are refused; snapshots sort by
// step and are pruned to the latest N; a snapshot's task files are written with
// its checkpoint, all or none.
#include "models/checkpoint_average.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::checkpoint_config;

namespace {

// Every param filled with `value` + its element index / 1000, an optimizer
// moment, and a trainer state naming `tag`.
Checkpoint filled(const TransformerConfig& cfg, float value, const std::string& tag) {
  Checkpoint c{"copy", cfg, {}, "{\"tag\":\"" + tag + "\"}", "transformer", {}};
  for (const auto& [name, type] : param_types(cfg)) {
    Tensor t = Tensor::zeros(type);
    float i = 0;
    for (float& x : t.f32()) x = value + (i++) / 1000;
    c.tensors.emplace(name, t);
    c.tensors.emplace(name + ".adam_m", Tensor::zeros(type));
    c.tensors.at(name + ".adam_m").f32().fill(value);
  }
  return c;
}

}  // namespace

TEST_CASE("the average of two checkpoints is their element-wise mean; the rest is the last one's") {
  const Checkpoint a = filled(checkpoint_config(), 1.0f, "a"), b = filled(checkpoint_config(), 4.0f, "b");
  const Checkpoint avg = average_checkpoints({a, b});
  CHECK(avg.trainer_state == b.trainer_state);
  for (const auto& [name, type] : param_types(checkpoint_config())) {
    const auto &x = a.tensors.at(name).f32(), &y = b.tensors.at(name).f32(), &m = avg.tensors.at(name).f32();
    for (size_t i = 0; i < m.size(); ++i) CHECK(m.data()[i] == (x.data()[i] + y.data()[i]) / 2);
    CHECK(avg.tensors.at(name + ".adam_m").f32().data()[0] == 4.0f);  // the last one's moments
  }
  // One checkpoint averages to itself.
  const Checkpoint one = average_checkpoints({a});
  for (const auto& [name, t] : a.tensors) CHECK(one.tensors.at(name).f32() == t.f32());
}

TEST_CASE("checkpoints of another task or architecture are refused") {
  Checkpoint other_task = filled(checkpoint_config(), 1.0f, "x");
  other_task.task = "de-en";
  check_error([&] { average_checkpoints({filled(checkpoint_config(), 1.0f, "a"), other_task}); },
              {"tasks copy and de-en"});
  check_error(
      [&] { average_checkpoints({filled(checkpoint_config(8), 1.0f, "a"), filled(checkpoint_config(16), 1.0f, "b")}); },
      {"average: checkpoints of configs"});
  check_error([&] { average_checkpoints({}); }, {"no checkpoints"});
}

TEST_CASE("snapshots sort by step and are pruned to the latest") {
  TempDir dir;
  for (int64_t step : {900, 1000, 80, 12000}) std::filesystem::create_directories(snapshot_dir(dir.path().string(), step));
  std::vector<std::string> all = snapshots(dir.path().string());
  REQUIRE(all.size() == 4);
  CHECK(all.front().find("step-00000080") != std::string::npos);
  CHECK(all.back().find("step-00012000") != std::string::npos);
  prune_snapshots(dir.path().string(), 2);
  all = snapshots(dir.path().string());
  REQUIRE(all.size() == 2);
  CHECK(all[0].find("step-00001000") != std::string::npos);
  CHECK(snapshots(dir.file("missing")).empty());
}

TEST_CASE("a snapshot gets the run's task files (not its checkpoint or records), so it evaluates by itself") {
  TempDir dir;
  const std::string run = dir.file("run"), snap = snapshot_dir(run, 7);
  std::filesystem::create_directories(run);
  const auto write = [](const std::string& path, const std::string& bytes) { std::ofstream(path) << bytes; };
  write(run + "/spm.model", std::string("sub\0words", 9));
  write(run + "/checkpoint.safetensors", "params");
  write(run + "/loss_curve.svg", "<svg/>");
  write(run + "/log.jsonl", "{}");
  const std::vector<FileBytes> files = task_files(run, snap);
  REQUIRE(files.size() == 1);
  CHECK(files[0].path == snap + "/spm.model");
  CHECK(files[0].bytes == std::string("sub\0words", 9));
  CHECK_THROWS_AS(task_files(dir.file("missing"), snap), Error);
}

TEST_CASE("a checkpoint and its task files are written all or none") {
  TempDir dir;
  const std::string out = dir.file("average");
  std::filesystem::create_directories(out + "/spm.model");  // a directory where a task file goes
  std::ofstream(out + "/spm.model/inside") << "x";
  const Checkpoint c = filled(checkpoint_config(), 1.0f, "a");
  check_error([&] { save_checkpoint(out, c, {{out + "/vocab.txt", "words"}, {out + "/spm.model", "pieces"}}); },
              {out + "/spm.model", "none of the 3 files was changed"});
  CHECK_FALSE(std::filesystem::exists(checkpoint_file(out)));
  CHECK_FALSE(std::filesystem::exists(out + "/vocab.txt"));
  std::filesystem::remove_all(out + "/spm.model");
  save_checkpoint(out, c, {{out + "/vocab.txt", "words"}, {out + "/spm.model", "pieces"}});
  CHECK(load_checkpoint(out).trainer_state == c.trainer_state);
  std::ifstream in(out + "/spm.model", std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "pieces");
}
