#pragma once
// What the trainer needs, beyond the tensors, to continue a run exactly where a
// checkpoint left it: the step, the position in the batch stream, the settings
// that shape the trajectory, and the loss history for the curve. Stored as JSON
// in the checkpoint's "trainer" metadata.
#include <cstdint>
#include <string>
#include <vector>

#include "models/train/trainer.h"

namespace kiln::models {

struct TrainerState {
  int64_t step = 0;      // steps done
  int64_t epoch = 0;     // the epoch of train_batches being read (copy: one batch per epoch)
  int64_t position = 0;  // batches of that epoch already used
  uint64_t seed = 0;     // param init, dropout and batch order
  int64_t batch_tokens = 0, warmup = 0, max_train_len = 0;
  int64_t update_freq = 1;  // parts per update and rank (--update-freq)
  // An update's batch (batch_tokens x parts tokens) is cut into `parts` parts
  // (update_parts.h): update_freq on each of `ranks` ranks. A resumed run keeps
  // `parts`, on whatever rank count divides it.
  int64_t parts = 1, ranks = 1;
  double lr_factor = 0;
  double train_seconds = 0;  // training time so far, over resumes (train_clock.h)
  std::vector<EvalPoint> train_losses, dev_losses;
  std::vector<EvalPoint> dev_bleu, dev_chrf;  // each dev evaluation's scores (EvalPoint::loss holds the score)
  // Choosing the model to keep: the metric (loss, bleu or chrf), the best
  // evaluation so far (best_step -1: none yet) and how many have not beaten it since.
  std::string best_metric = "bleu";
  int64_t best_step = -1;
  double best_score = 0;
  int64_t evals_since_best = 0;
};

std::string trainer_state_to_json(const TrainerState& s);
// kiln::Error naming the missing or mistyped key.
TrainerState trainer_state_from_json(const std::string& json);

}  // namespace kiln::models
