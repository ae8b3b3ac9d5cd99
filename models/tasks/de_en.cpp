// German to English: trans-de-en's pairs, split by a hash of the German side,
// encoded with a joint sentencepiece vocabulary learned on the train split.
#include <array>
#include <filesystem>
#include <mutex>
#include <optional>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/tasks/batching.h"
#include "models/tasks/hash_split.h"
#include "models/tasks/subwords.h"
#include "models/tasks/task.h"
#include "models/tasks/trans_dict.h"

namespace kiln::models {
namespace {

// Both sides of an evenly spaced sample of the pairs.
std::vector<std::string> subword_sample(const std::vector<TextPair>& pairs) {
  const std::size_t stride = subword_sample_stride(pairs.size(), 2);
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < pairs.size(); i += stride) {
    texts.push_back(pairs[i].de);
    texts.push_back(pairs[i].en);
  }
  return texts;
}

using PairsBySplit = std::array<std::vector<TextPair>, 3>;  // by Split

PairsBySplit read_split_pairs(const DeEnOptions& options) {
  PairsBySplit by_split;
  for (TextPair& pair : read_trans_dict(options.data_path))
    by_split[static_cast<int>(split_of(pair.de, options.dev_permille, options.test_permille))].push_back(
        std::move(pair));
  return by_split;
}

const DeEnOptions& validated(const DeEnOptions& options) {
  if (options.dev_permille < 0 || options.test_permille < 0 || options.dev_permille + options.test_permille > 1000)
    throw Error("de-en: dev and test shares must be between 0 and 1000 permille together");
  return options;
}

std::vector<BucketShape> square_buckets(int64_t max_len) {
  std::vector<BucketShape> shapes;
  for (int64_t len : bucket_lengths(max_len)) shapes.push_back({len, len});
  return shapes;
}

class DeEnTask final : public Task {
 public:
  explicit DeEnTask(const DeEnOptions& options)
      : options_(validated(options)),
        bucketing_(square_buckets(options.max_len), {kSubwordPad, kSubwordBos, kSubwordEos}),
        subwords_(load_or_learn_subwords()) {}

  std::string name() const override { return "de-en"; }
  int64_t vocab_size() const override { return subwords_.size(); }
  int32_t pad_id() const override { return kSubwordPad; }
  int32_t bos_id() const override { return kSubwordBos; }
  int32_t eos_id() const override { return kSubwordEos; }
  std::vector<int32_t> never_generated() const override { return {kSubwordPad, kSubwordUnk, kSubwordBos}; }
  // English runs longer than German in subwords now and then: room for twice the source.
  int64_t max_output_len(const Example& example) const override {
    return std::min<int64_t>(options_.max_len, 2 * static_cast<int64_t>(example.src.size()) + 8);
  }
  const std::vector<Example>& examples(Split split) const override {
    std::call_once(examples_encoded_, [this] { encode_examples(); });
    return examples_[static_cast<int>(split)];
  }

  std::unique_ptr<TrainEpoch> train_epoch(uint64_t seed, int64_t epoch, int64_t tokens_per_batch) const override {
    const std::vector<Example>& train = examples(Split::train);
    return std::make_unique<PlannedEpoch>(
        bucketing_.train_plan(
            train.size(), [&](std::size_t i) { return bucketing_.bucket_of(train[i]); }, seed, epoch,
            tokens_per_batch),
        [this, &train, tokens_per_batch](const BatchRows& rows) { return bucketing_.make(train, rows, tokens_per_batch); });
  }
  std::vector<std::pair<std::vector<size_t>, Batch>> eval_batches(Split split,
                                                                  int64_t tokens_per_batch) const override {
    return bucketing_.eval_batches(examples(split), tokens_per_batch);
  }

  std::vector<int32_t> encode(const std::string& text) const override {
    const std::string normalized = normalize_spaces(text);
    if (normalized.empty()) throw Error("the text to translate is empty");
    return subwords_.encode(normalized);
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::vector<int32_t> pieces;
    for (int32_t id : ids) {
      if (id == kSubwordEos) break;
      if (id != kSubwordPad && id != kSubwordBos) pieces.push_back(id);
    }
    return subwords_.decode(pieces);
  }

 private:
  // The saved model if there is one: the dictionary is then read only when examples
  // are needed, so translating with a checkpoint needs neither the data nor the wait.
  // Otherwise a model learned from the train split, saved if a path is given.
  Subwords load_or_learn_subwords() {
    const std::string& path = options_.spm_model_path;
    if (!path.empty() && std::filesystem::exists(path))
      return Subwords(read_file(path, 256 * kMiB, "a subword model"), path);
    pairs_ = read_split_pairs(options_);
    const std::string model =
        Subwords::learn(subword_sample((*pairs_)[static_cast<int>(Split::train)]), options_.vocab_size);
    if (!path.empty()) write_file_atomically(path, model);
    return Subwords(model, path.empty() ? "learned subword model" : path);
  }

  // Encodes every pair; pairs longer than max_len subwords on either side are dropped.
  void encode_examples() const {
    if (!pairs_) pairs_ = read_split_pairs(options_);
    for (std::size_t split = 0; split < pairs_->size(); ++split) {
      for (TextPair& pair : (*pairs_)[split]) {
        Example ex{subwords_.encode(pair.de), subwords_.encode(pair.en), std::move(pair.de), std::move(pair.en)};
        if (bucketing_.bucket_of(ex)) examples_[split].push_back(std::move(ex));
      }
    }
    pairs_.reset();
  }

  DeEnOptions options_;
  Bucketing bucketing_;
  mutable std::optional<PairsBySplit> pairs_;             // read, not encoded yet
  mutable std::array<std::vector<Example>, 3> examples_;  // by Split
  mutable std::once_flag examples_encoded_;
  Subwords subwords_;
};

}  // namespace

std::unique_ptr<Task> make_de_en_task(const DeEnOptions& options) { return std::make_unique<DeEnTask>(options); }

}  // namespace kiln::models
