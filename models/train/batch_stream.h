#pragma once
// The stream of batches a run trains on: the task's epochs one after another,
// each an update's batches (batch_tokens x parts target tokens), read from
// where the trainer state says (epoch, position), which it moves on as it
// reads, so that a resumed run reads on where its checkpoint left off.
// Batches of a shape longer than --max-train-len are skipped.
#include <memory>

#include "models/tasks/task.h"
#include "models/run/executable_cache.h"
#include "models/train/trainer_state.h"

namespace kiln::models {

// The bucket shape of a batch: (B, S, T).
BatchShape shape_of(const Batch& b);

class BatchStream {
 public:
  // Reads and moves on state.epoch and state.position; both must outlive it.
  BatchStream(const Task& task, TrainerState& state) : task_(task), state_(state) {}
  // The plan of the current epoch (made on first use).
  const TrainEpoch& epoch();
  // The next batch, moving to the next epoch as needed. kiln::Error when two
  // epochs in a row have none that fits --max-train-len.
  const Batch& next();

 private:
  std::unique_ptr<TrainEpoch> plan() const;

  const Task& task_;
  TrainerState& state_;
  std::unique_ptr<TrainEpoch> epoch_;
  Batch batch_;  // the last one read
};

}  // namespace kiln::models
