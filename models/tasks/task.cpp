#include "models/tasks/task.h"

#include "engine/ir/error.h"

namespace kiln::models {

Split parse_split(const std::string& name) {
  if (name == "train") return Split::train;
  if (name == "dev") return Split::dev;
  if (name == "test") return Split::test;
  throw Error("unknown split '" + name + "' (expected train, dev or test)");
}

std::string split_name(Split split) {
  switch (split) {
    case Split::train:
      return "train";
    case Split::dev:
      return "dev";
    case Split::test:
      return "test";
  }
  return "?";
}

std::vector<Batch> Task::train_batches(uint64_t seed, int64_t epoch, int64_t tokens_per_batch) const {
  const std::unique_ptr<TrainEpoch> batches = train_epoch(seed, epoch, tokens_per_batch);
  std::vector<Batch> made;
  for (std::size_t i = 0; i < batches->size(); ++i) made.push_back(batches->batch(i));
  return made;
}

}  // namespace kiln::models
