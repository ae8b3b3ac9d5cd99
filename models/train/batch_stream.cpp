#include "models/train/batch_stream.h"

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

bool fits_max_train_len(const BatchShape& s, int64_t max_len) {
  return max_len <= 0 || (s.src_len <= max_len && s.tgt_len <= max_len);
}

}  // namespace

BatchShape shape_of(const Batch& b) { return {b.src.shape().at(0), b.src.shape().at(1), b.tgt_in.shape().at(1)}; }

std::unique_ptr<TrainEpoch> BatchStream::plan() const {
  return task_.train_epoch(state_.seed, state_.epoch, state_.batch_tokens * state_.parts);
}

const TrainEpoch& BatchStream::epoch() {
  if (!epoch_) epoch_ = plan();
  return *epoch_;
}

const Batch& BatchStream::next() {
  epoch();
  for (int64_t epochs = 0; epochs < 2;) {
    if (static_cast<size_t>(state_.position) >= epoch_->size()) {
      ++state_.epoch;
      ++epochs;
      state_.position = 0;
      epoch_ = plan();
    }
    while (static_cast<size_t>(state_.position) < epoch_->size()) {
      batch_ = epoch_->batch(static_cast<size_t>(state_.position++));
      if (fits_max_train_len(shape_of(batch_), state_.max_train_len)) return batch_;
    }
  }
  throw Error(
      "task " + task_.name() + " has no training batches" +
      (state_.max_train_len > 0 ? " of length <= --max-train-len " + std::to_string(state_.max_train_len) : ""));
}

}  // namespace kiln::models
