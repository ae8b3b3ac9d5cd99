#pragma once
// What a run keeps in its directory: the checkpoint a continued run resumes
// from, the snapshots of its last saves (for `kiln average --last N`), its best
// evaluations (DIR/best, DIR/best-snapshots: models/best_checkpoints.h), the
// loss curve and settings.toml. Every file is written atomically, so an
// interrupted save leaves the last one whole.
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "engine/tensor/tensor.h"
#include "models/train/eval_cadence.h"
#include "models/train/trainer.h"
#include "models/train/trainer_state.h"
#include "models/transformer/config.h"

namespace kiln::models {

class CheckpointKeeper {
 public:
  // A run of `task` training `config` in `dir`; the options' keep_snapshots and keep_best say how much it keeps.
  CheckpointKeeper(std::string dir, std::string task, TransformerConfig config, int64_t keep_snapshots,
                   int64_t keep_best);

  // Saves the run at state.step: DIR/checkpoint.safetensors (`tensors`, the
  // params and optimizer state, with the trainer state, in which it records
  // train_seconds of training), the params as the newest of the kept
  // snapshots, and DIR/loss_curve.svg from the state's history.
  void save(TrainerState& state, double train_seconds, const std::map<std::string, Tensor>& tensors) const;

  // Keeps the evaluation at state.step that scored `score`: as DIR/best when
  // `is_best`, and among the keep_best best in DIR/best-snapshots when it is
  // one of them. Writes nothing (and leaves the state alone) for an evaluation
  // that is not the best when only the best is kept; otherwise records
  // train_seconds in the state, as save() does.
  void keep_evaluation(TrainerState& state, double train_seconds, const std::map<std::string, Tensor>& tensors,
                       double score, bool is_best) const;

  // DIR/settings.toml: `settings` (run_settings) as `kiln train --config-file`
  // reads them back, headed by the step and, as a comment, why the recipe is what it is.
  void write_settings(const nlohmann::ordered_json& settings, const std::string& recipe_why, int64_t step) const;

  // What the run keeps for `kiln average` and on disk in all, e.g. "kept 5
  // snapshots (DIR/snapshots, params only: 61.2 MB) and 3 best (DIR/best-snapshots:
  // 36.7 MB) for kiln average --last N / --best N; DIR holds 160.3 MB".
  std::string kept_text() const;

 private:
  std::string dir_, task_;
  TransformerConfig config_;
  int64_t keep_snapshots_, keep_best_;
};

// Every setting the run trains with, resolved (recipe, checkpoint, flags), by
// flag name: what settings.toml holds.
nlohmann::ordered_json run_settings(const TrainOptions& o, const EvalCadence& cadence, const std::string& task,
                                    const TransformerConfig& c, const TrainerState& s);

}  // namespace kiln::models
