// The checkpoint keeper (models/train/checkpoint_keeper.h): a save writes the
// checkpoint with the trainer state, the newest snapshots and the loss curve,
// with no temporaries left, and a save that fails leaves the last one whole;
// the best evaluations by dev loss are kept, and settings.toml holds the run's
// settings as flags.
#include "models/train/checkpoint_keeper.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/temp_dir.h"
#include "engine/ir/error.h"
#include "models/best_checkpoints.h"
#include "models/checkpoint.h"
#include "models/checkpoint_average.h"
#include "models/transformer/transformer.h"
#include "side_files.h"
#include "text_and_files.h"
#include "trainer_parts_fixtures.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::copy_model;
namespace fs = std::filesystem;

namespace {

// A state a checkpoint may hold (positive batch, warm-up and rate).
TrainerState keeper_state() {
  TrainerState s;
  s.batch_tokens = 640;
  s.warmup = 100;
  s.lr_factor = 1;
  return s;
}

// The params, Adam's moments and the step counter of the copy model.
std::map<std::string, Tensor> kept_tensors(uint64_t seed) {
  AdamOptions adam;
  adam.d_model = copy_model().d_model;
  return test::seeded_tensors(build_train_graph(copy_model(), 1, 1, 1, adam), seed);
}

std::vector<std::string> keys_of(const nlohmann::ordered_json& j) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  return keys;
}

}  // namespace

TEST_CASE("the keeper saves the checkpoint, the newest snapshots and the curve; a failed save keeps the last") {
  TempDir tmp;
  const std::string dir = tmp.file("run");
  const CheckpointKeeper keeper(dir, "copy", copy_model(), 2, 1);
  const std::map<std::string, Tensor> tensors = kept_tensors(3);
  TrainerState state = keeper_state();
  for (int64_t step = 1; step <= 3; ++step) {
    state.step = step;
    state.train_losses.push_back({step, 3.0 - 0.1 * static_cast<double>(step)});
    keeper.save(state, 10.0 * static_cast<double>(step), tensors);
  }
  CHECK(state.train_seconds == 30.0);
  const Checkpoint saved = load_checkpoint(dir);
  CHECK(saved.task == "copy");
  const TrainerState back = trainer_state_from_json(saved.trainer_state);
  CHECK(back.step == 3);
  CHECK(back.train_seconds == 30.0);
  CHECK(back.train_losses.size() == 3);
  REQUIRE(saved.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) CHECK(test::same_bytes(saved.tensors.at(name), t));
  CHECK(side_files(checkpoint_file(dir)).empty());
  CHECK(snapshots(dir) == std::vector<std::string>{snapshot_dir(dir, 2), snapshot_dir(dir, 3)});
  const Checkpoint snapshot = load_checkpoint(snapshot_dir(dir, 3));
  CHECK(snapshot.tensors.size() < tensors.size());  // params only
  const std::string curve = read_file(dir + "/loss_curve.svg");
  CHECK(curve.find("copy test-16: loss per target token") != std::string::npos);
  CHECK(keeper.kept_text().starts_with("kept 2 snapshots (" + dir + "/snapshots, params only: "));

  // A non-finite param: nothing is written, the step-3 save stands.
  std::map<std::string, Tensor> diverged = tensors;
  diverged.at(param_types(copy_model()).front().first).f32().fill(std::numeric_limits<float>::quiet_NaN());
  state.step = 4;
  CHECK_THROWS_AS(keeper.save(state, 40, diverged), Error);
  CHECK(trainer_state_from_json(load_checkpoint(dir).trainer_state).step == 3);
  CHECK(snapshots(dir) == std::vector<std::string>{snapshot_dir(dir, 2), snapshot_dir(dir, 3)});
  CHECK(read_file(dir + "/loss_curve.svg") == curve);
  CHECK(side_files(checkpoint_file(dir)).empty());
}

TEST_CASE("the keeper keeps the best evaluation by dev loss in DIR/best and the two best for kiln average") {
  TempDir tmp;
  const std::string dir = tmp.path().string();  // the run's directory, made when it started
  const CheckpointKeeper keeper(dir, "copy", copy_model(), 0, 2);
  TrainerState state = keeper_state();
  state.best_metric = "loss";
  const struct {
    int64_t step;
    double loss;
    bool is_best;
  } evaluations[] = {{1, 3.0, true}, {2, 2.5, true}, {3, 2.8, false}, {4, 3.5, false}};
  for (const auto& e : evaluations) {
    state.step = e.step;
    keeper.keep_evaluation(state, 60.0 * static_cast<double>(e.step), kept_tensors(static_cast<uint64_t>(e.step)),
                           e.loss, e.is_best);
  }
  const TrainerState best = trainer_state_from_json(load_checkpoint(best_dir(dir)).trainer_state);
  CHECK(best.step == 2);
  CHECK(best.train_seconds == 120.0);
  const std::string param = param_types(copy_model()).front().first;
  CHECK(test::same_bytes(load_checkpoint(best_dir(dir)).tensors.at(param), kept_tensors(2).at(param)));
  const std::vector<std::string> kept = best_snapshots(dir, 2);  // best first
  CHECK(fs::path(kept[0]).filename() == "step-00000002");
  CHECK(fs::path(kept[1]).filename() == "step-00000003");
  CHECK_THROWS_AS(best_snapshots(dir, 3), Error);       // step 1 was displaced, step 4 never kept
  CHECK(!fs::exists(dir + "/checkpoint.safetensors"));  // evaluations are not saves

  // Keeping the best alone, an evaluation that is not the best writes nothing.
  TempDir other;
  const CheckpointKeeper best_only(other.path().string(), "copy", copy_model(), 0, 1);
  TrainerState s = keeper_state();
  s.step = 5;
  best_only.keep_evaluation(s, 99, kept_tensors(1), 3.0, false);
  CHECK(fs::is_empty(other.path()));
  CHECK(s.train_seconds == 0);
}

TEST_CASE("run_settings names every setting by its flag, and settings.toml holds them") {
  TrainOptions o;
  o.checkpoint_dir = "ckpt";
  o.steps = 10;
  o.exec.backend = "interp";
  TrainerState s;
  s.batch_tokens = 640;
  s.warmup = 100;
  s.lr_factor = 0.5;
  const nlohmann::ordered_json copy = run_settings(o, {2, 0, 2}, "copy", copy_model(), s);
  CHECK(keys_of(copy) == std::vector<std::string>{
                             "task",       "checkpoint",  "config",          "d-model",       "heads",        "d-ff",
                             "layers",     "dropout",     "label-smoothing", "seed",          "batch-tokens", "warmup",
                             "lr-factor",  "update-freq", "best-metric",     "keep-best",     "backend",      "steps",
                             "eval-every", "save-every",  "keep-snapshots",  "eval-sentences"});
  CHECK(copy["config"] == "test-16");
  CHECK(copy["lr-factor"] == 0.5);

  o.steps = 0;
  o.minutes = 3;
  o.patience = 2;  // 0, never stopping early, is the default and not written
  o.text.train = "corpus.train";
  o.text.valid = "corpus.valid";
  const nlohmann::ordered_json text = run_settings(o, {0, 0.6, 0}, kTextTask, copy_model(), s);
  CHECK(text["minutes"] == 3.0);
  CHECK(text["patience"] == 2);
  CHECK(text["eval-minutes"] == 0.6);
  CHECK(!text.contains("steps"));
  CHECK(text["train"] == "corpus.train");
  CHECK(text["vocab"] == "joint");

  TempDir tmp;
  const CheckpointKeeper keeper(tmp.path().string(), "copy", copy_model(), 0, 1);
  keeper.write_settings(copy, "why the recipe", 7);
  const std::string toml = read_file(tmp.file("settings.toml"));
  CHECK(
      toml.starts_with("# kiln train's effective settings at step 7 (kiln train --config-file FILE reads them; "
                       "flags given on the command line win)\n# why the recipe\ntask = \"copy\"\n"
                       "checkpoint = \"ckpt\"\nconfig = \"test-16\"\nd-model = 16\n"));
  CHECK(toml.ends_with("eval-sentences = 200\n"));
  CHECK(side_files(tmp.file("settings.toml")).empty());
}
