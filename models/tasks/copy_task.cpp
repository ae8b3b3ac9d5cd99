// The Annotated Transformer's copy task: random sequences that start with token 1,
// to be reproduced exactly.
#include <cmath>
#include <set>
#include <sstream>

#include "engine/ir/error.h"
#include "models/tasks/batching.h"
#include "models/tasks/counter_rng.h"
#include "models/tasks/task.h"

namespace kiln::models {
namespace {

constexpr int32_t kPad = 0, kStart = 1;
// The fixed sets' own seeds (their streams are the set's index: 0 dev, 1 test).
constexpr uint64_t kHeldOutSeed = 0x636f70792d746573u;  // "copy-tes"

using Sequence = std::vector<int32_t>;

std::string join(const Sequence& seq) {
  std::string text;
  for (int32_t id : seq) {
    if (!text.empty()) text += ' ';
    text += std::to_string(id);
  }
  return text;
}

class CopyTask final : public Task {
 public:
  explicit CopyTask(const CopyTaskOptions& options)
      : options_(options), bucketing_({{options.length, options.length - 1}}, {kPad, kStart, -1}) {
    if (options.vocab < 3) throw Error("copy task: vocabulary must hold pad, start and one more token");
    if (options.length < 2) throw Error("copy task: sequences need at least 2 tokens");
    if (options.dev_size < 0 || options.test_size < 0) throw Error("copy task: negative dev or test size");
    // Held-out sets at most half of all sequences, so drawing around them stays quick.
    const double distinct = std::pow(static_cast<double>(options.vocab - 1), static_cast<double>(options.length - 1));
    if (2.0 * static_cast<double>(options.dev_size + options.test_size) > distinct)
      throw Error("copy task: dev and test sets too large for " + std::to_string(options.vocab) +
                  " tokens and length " + std::to_string(options.length));
    dev_ = draw_held_out(0, options.dev_size);
    test_ = draw_held_out(1, options.test_size);
  }

  std::string name() const override { return "copy"; }
  int64_t vocab_size() const override { return options_.vocab; }
  int32_t pad_id() const override { return kPad; }
  int32_t bos_id() const override { return kStart; }
  int32_t eos_id() const override { return -1; }
  // The start token 1 is also a token to copy.
  std::vector<int32_t> never_generated() const override { return {kPad}; }
  int64_t max_output_len(const Example& example) const override { return static_cast<int64_t>(example.src.size()) - 1; }

  const std::vector<Example>& examples(Split split) const override {
    switch (split) {
      case Split::dev:
        return dev_;
      case Split::test:
        return test_;
      case Split::train:
        break;
    }
    return train_;
  }

  // One batch per epoch, drawn when it is made.
  std::unique_ptr<TrainEpoch> train_epoch(uint64_t seed, int64_t epoch, int64_t tokens_per_batch) const override {
    const int64_t rows = rows_per_batch(tokens_per_batch, bucketing_.shapes()[0]);
    return std::make_unique<PlannedEpoch>(std::vector<BatchRows>(1), [this, seed, epoch, rows](const BatchRows&) {
      CounterRng rng(seed, static_cast<uint64_t>(epoch));
      std::vector<Example> batch_examples;
      while (static_cast<int64_t>(batch_examples.size()) < rows) {
        Sequence seq = draw(rng);
        if (!held_out_.contains(seq)) batch_examples.push_back(example_of(seq));
      }
      std::vector<const Example*> ptrs;
      for (const Example& ex : batch_examples) ptrs.push_back(&ex);
      return make_batch(ptrs, rows, bucketing_.shapes()[0], {kPad, kStart, -1});
    });
  }

  std::vector<std::pair<std::vector<size_t>, Batch>> eval_batches(Split split,
                                                                  int64_t tokens_per_batch) const override {
    return bucketing_.eval_batches(examples(split), tokens_per_batch);
  }

  // Whitespace-separated tokens 1..vocab-1 (0 is padding, not a token to copy).
  std::vector<int32_t> encode(const std::string& text) const override {
    std::istringstream in(text);
    std::vector<int32_t> ids;
    for (std::string word; in >> word;) {
      std::size_t used = 0;
      int value = -1;
      try {
        value = std::stoi(word, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != word.size() || value < 1 || value >= options_.vocab)
        throw Error("copy task: bad token '" + word + "' (expected integers 1.." + std::to_string(options_.vocab - 1) +
                    " separated by spaces)");
      ids.push_back(value);
    }
    if (ids.empty()) throw Error("copy task: the text is empty, nothing to copy");
    return ids;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    Sequence seq = {kStart};
    seq.insert(seq.end(), ids.begin(), ids.end());
    return join(seq);
  }

 private:
  Sequence draw(CounterRng& rng) const {
    Sequence seq = {kStart};
    for (int64_t i = 1; i < options_.length; ++i)
      seq.push_back(static_cast<int32_t>(1 + rng.below(static_cast<uint64_t>(options_.vocab - 1))));
    return seq;
  }

  static Example example_of(const Sequence& seq) {
    const std::string text = join(seq);
    return {seq, Sequence(seq.begin() + 1, seq.end()), text, text};
  }

  // `count` distinct sequences not in an earlier held-out set.
  std::vector<Example> draw_held_out(uint64_t stream, int64_t count) {
    CounterRng rng(kHeldOutSeed, stream);
    std::vector<Example> examples;
    while (static_cast<int64_t>(examples.size()) < count) {
      Sequence seq = draw(rng);
      if (held_out_.insert(seq).second) examples.push_back(example_of(seq));
    }
    return examples;
  }

  CopyTaskOptions options_;
  Bucketing bucketing_;
  std::set<Sequence> held_out_;  // dev and test: never drawn for training
  std::vector<Example> train_, dev_, test_;
};

}  // namespace

std::unique_ptr<Task> make_copy_task(const CopyTaskOptions& options) { return std::make_unique<CopyTask>(options); }

}  // namespace kiln::models
