#include "models/tasks/subwords.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <unordered_map>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

// Feeds in-memory texts to the trainer (no temporary corpus file).
class TextIterator : public sentencepiece::SentenceIterator {
 public:
  explicit TextIterator(const std::vector<std::string>& texts) : texts_(texts) {}
  bool done() const override { return next_ >= texts_.size(); }
  void Next() override { ++next_; }
  const std::string& value() const override { return texts_[next_]; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  const std::vector<std::string>& texts_;
  std::size_t next_ = 0;
};

}  // namespace

std::string Subwords::learn(const std::vector<std::string>& texts, int64_t vocab_size) {
  if (vocab_size < 8) throw Error("subword vocabulary size must be at least 8, got " + std::to_string(vocab_size));
  if (texts.empty()) throw Error("cannot learn subwords from no text");
  // Two threads, always: the EM sums are split the same way on every machine, so the
  // model bytes are reproducible (checked by the tests).
  // hard_vocab_limit=false lets a small corpus give a smaller vocabulary instead of failing.
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "unigram"},
      {"vocab_size", std::to_string(vocab_size)},
      {"pad_id", "0"},
      {"unk_id", "1"},
      {"bos_id", "2"},
      {"eos_id", "3"},
      {"normalization_rule_name", "identity"},
      {"character_coverage", "0.9995"},
      {"hard_vocab_limit", "false"},
      {"num_threads", "2"},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"minloglevel", "2"},  // sentencepiece's progress log off
  };
  TextIterator iterator(texts);
  std::string model;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &iterator, &model);
  if (!status.ok()) throw Error("learning subwords failed: " + status.ToString());
  return model;
}

Subwords::Subwords(const std::string& serialized_model, const std::string& origin)
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = processor_->LoadFromSerializedProto(serialized_model);
  if (!status.ok()) throw Error(origin + ": not a sentencepiece model: " + status.ToString());
  if (processor_->pad_id() != kSubwordPad || processor_->unk_id() != kSubwordUnk ||
      processor_->bos_id() != kSubwordBos || processor_->eos_id() != kSubwordEos)
    throw Error(origin + ": sentencepiece model without kiln's special ids (pad 0, unk 1, bos 2, eos 3)");
}

Subwords::Subwords(Subwords&&) noexcept = default;
Subwords& Subwords::operator=(Subwords&&) noexcept = default;
Subwords::~Subwords() = default;

int64_t Subwords::size() const { return processor_->GetPieceSize(); }

std::vector<int32_t> Subwords::encode(const std::string& text) const {
  std::vector<int> ids;
  const auto status = processor_->Encode(text, &ids);
  if (!status.ok()) throw Error("subword encoding failed: " + status.ToString());
  return {ids.begin(), ids.end()};
}

std::string Subwords::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  const auto status = processor_->Decode(std::vector<int>(ids.begin(), ids.end()), &text);
  if (!status.ok()) throw Error("subword decoding failed: " + status.ToString());
  return text;
}

}  // namespace kiln::models
