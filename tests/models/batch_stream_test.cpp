// The training stream (models/train/batch_stream.h): the task's epochs in
// order from the trainer state's position, which it moves on (so a stream
// made from a saved state reads on where the first left off), skipping
// batches longer than --max-train-len, and an error when none fits.
#include "models/train/batch_stream.h"

#include <doctest/doctest.h>

#include "check_error.h"

using namespace kiln;
using namespace kiln::models;

namespace {

// Epochs of three one-row batches; batch i of epoch e holds the token 10e + i,
// and batch 1 is 20 tokens long, the others 4.
class ThreeBatchEpoch final : public TrainEpoch {
 public:
  explicit ThreeBatchEpoch(int64_t epoch) : epoch_(epoch) {}
  size_t size() const override { return 3; }
  Batch batch(size_t i) const override {
    const int64_t len = i == 1 ? 20 : 4;
    Batch b;
    b.src = Tensor(Tensor::I32::from_shape({1, static_cast<size_t>(len)}));
    b.src.i32().fill(static_cast<int32_t>(10 * epoch_ + static_cast<int64_t>(i)));
    b.tgt_in = b.tgt_out = b.src;
    b.rows = 1;
    b.tgt_tokens = len;
    return b;
  }

 private:
  int64_t epoch_;
};

class ThreeBatchTask final : public Task {
 public:
  mutable int64_t asked_tokens = 0;  // tokens_per_batch of the last epoch planned
  std::string name() const override { return "three"; }
  int64_t vocab_size() const override { return 100; }
  int32_t pad_id() const override { return 0; }
  int32_t bos_id() const override { return 1; }
  int32_t eos_id() const override { return -1; }
  std::vector<int32_t> never_generated() const override { return {}; }
  int64_t max_output_len(const Example&) const override { return 0; }
  const std::vector<Example>& examples(Split) const override { return none_; }
  std::unique_ptr<TrainEpoch> train_epoch(uint64_t, int64_t epoch, int64_t tokens_per_batch) const override {
    asked_tokens = tokens_per_batch;
    return std::make_unique<ThreeBatchEpoch>(epoch);
  }
  std::vector<std::pair<std::vector<size_t>, Batch>> eval_batches(Split, int64_t) const override { return {}; }
  std::vector<int32_t> encode(const std::string&) const override { return {}; }
  std::string decode(const std::vector<int32_t>&) const override { return ""; }

 private:
  std::vector<Example> none_;
};

int32_t token_of(const Batch& b) { return b.src.i32()(0, 0); }

}  // namespace

TEST_CASE("the stream reads the epochs in order, skipping long batches, and a saved state reads on") {
  const ThreeBatchTask task;
  TrainerState state;
  state.batch_tokens = 64;
  state.parts = 4;
  state.max_train_len = 16;
  BatchStream stream(task, state);
  CHECK(stream.epoch().size() == 3);
  CHECK(task.asked_tokens == 256);  // an update's batch: batch_tokens x parts
  const std::vector<int32_t> expected = {0, 2, 10, 12, 20, 22};
  for (size_t i = 0; i < 3; ++i) CHECK(token_of(stream.next()) == expected[i]);
  CHECK(state.epoch == 1);
  CHECK(state.position == 1);

  TrainerState saved = state;  // a checkpoint's, resumed
  BatchStream resumed(task, saved);
  for (size_t i = 3; i < expected.size(); ++i) {
    CAPTURE(i);
    const Batch& b = resumed.next();
    CHECK(token_of(b) == expected[i]);
    CHECK(token_of(stream.next()) == expected[i]);
    CHECK(shape_of(b) == BatchShape{1, 4, 4});
  }
  CHECK(saved.epoch == state.epoch);
  CHECK(saved.position == state.position);

  state.max_train_len = 0;  // all: the long one too
  CHECK(token_of(stream.next()) == 30);
  CHECK(token_of(stream.next()) == 31);
}

TEST_CASE("a stream with no batch that fits --max-train-len says so") {
  const ThreeBatchTask task;
  TrainerState state;
  state.max_train_len = 2;
  BatchStream stream(task, state);
  check_error([&] { stream.next(); }, {"task three has no training batches of length <= --max-train-len 2"});
  CHECK(state.epoch == 2);  // it looked through two whole epochs
}
