#include "models/tasks/text_task.h"

#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/json_field.h"
#include "models/tasks/parallel_text.h"
#include "models/tasks/subwords.h"
#include "models/tasks/token_corpus.h"

namespace kiln::models {

std::string path_in(const std::string& dir, const std::string& file) {
  return (std::filesystem::path(dir) / file).string();
}

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

Subwords load_subwords(const std::string& path) { return Subwords(read_file(path, 256 * kMiB, "a subword model"), path); }

// The cleaned text of a valid or test split, a line per pair.
std::vector<std::string> read_lines(const std::string& path) {
  const std::string text = read_file(path, size_t{4} << 30, "a prepared split's text");
  std::vector<std::string> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return lines;
}

class TextTask final : public Task {
 public:
  TextTask(TextCorpusInfo info, const std::string& dir)
      : info_(std::move(info)),
        data_dir_(info_.data_dir.empty() ? dir : info_.data_dir),
        bucketing_(square_shapes(info_.bucket_lengths), {kSubwordPad, kSubwordBos, kSubwordEos}),
        source_model_(load_subwords(path_in(dir, info_.source_model_file()))),
        target_model_(info_.joint_vocab ? std::nullopt
                                        : std::optional<Subwords>(load_subwords(path_in(dir, info_.target_model_file())))) {
    if (source_model_.size() != info_.source_vocab || (target_model_ && target_model_->size() != info_.target_vocab))
      throw Error(path_in(dir, "corpus.json") + ": its subword models' sizes differ from what it records");
  }

  std::string name() const override { return kTextTask; }
  int64_t vocab_size() const override { return info_.model_vocab(); }
  int32_t pad_id() const override { return kSubwordPad; }
  int32_t bos_id() const override { return kSubwordBos; }
  int32_t eos_id() const override { return kSubwordEos; }
  std::vector<int32_t> never_generated() const override {
    std::vector<int32_t> ids = {kSubwordPad, kSubwordUnk, kSubwordBos};
    if (!info_.joint_vocab)
      for (int64_t id = 4; id < info_.source_vocab; ++id) ids.push_back(static_cast<int32_t>(id));
    return ids;
  }
  int64_t max_output_len(const Example& example) const override {
    return std::min<int64_t>(info_.max_len, 2 * static_cast<int64_t>(example.src.size()) + 10);
  }

  const std::vector<Example>& examples(Split split) const override {
    load_data();
    return examples_[static_cast<int>(split)];
  }

  std::unique_ptr<TrainEpoch> train_epoch(uint64_t seed, int64_t epoch, int64_t tokens_per_batch) const override {
    load_data();
    return std::make_unique<PlannedEpoch>(
        bucketing_.train_plan(train_->size(), [&](std::size_t i) { return train_buckets_[i]; }, seed, epoch,
                              tokens_per_batch),
        [this, tokens_per_batch](const BatchRows& rows) {
          std::vector<Example> pairs;
          BatchRows local{rows.bucket, {}};
          for (std::size_t i : rows.indices) {
            local.indices.push_back(pairs.size());
            pairs.push_back({train_->source(i), train_->target(i), "", ""});
          }
          return bucketing_.make(pairs, local, tokens_per_batch);
        });
  }

  std::vector<std::pair<std::vector<size_t>, Batch>> eval_batches(Split split,
                                                                  int64_t tokens_per_batch) const override {
    return bucketing_.eval_batches(examples(split), tokens_per_batch);
  }

  std::vector<int32_t> encode(const std::string& text) const override {
    const std::string normalized = collapse_spaces(text);
    if (normalized.empty()) throw Error("the text to translate is empty");
    return source_model_.encode(normalized);
  }

  std::optional<CorpusSize> train_size() const override {
    load_data();
    CorpusSize size{static_cast<int64_t>(train_->size()), 0};
    for (std::size_t i = 0; i < train_->size(); ++i) size.target_tokens += train_->target_length(i) + 1;  // + eos
    return size;
  }

  std::string decode(const std::vector<int32_t>& ids) const override {
    std::vector<int32_t> pieces;
    for (int32_t id : ids) {
      if (id == kSubwordEos) break;
      if (id == kSubwordPad || id == kSubwordBos) continue;
      if (!target_model_) pieces.push_back(id);
      else if (id >= info_.source_vocab) pieces.push_back(static_cast<int32_t>(id - info_.source_vocab + 4));
      else if (id < 4) pieces.push_back(id);  // unk
    }
    return (target_model_ ? *target_model_ : source_model_).decode(pieces);
  }

 private:
  static std::vector<BucketShape> square_shapes(const std::vector<int64_t>& lengths) {
    std::vector<BucketShape> shapes;
    for (int64_t len : lengths) shapes.push_back({len, len});
    return shapes;
  }

  void load_data() const {
    std::call_once(loaded_, [this] {
      const int64_t vocab = info_.model_vocab();
      train_.emplace(path_in(data_dir_, "train.ids"), vocab);
      train_buckets_.reserve(train_->size());
      for (std::size_t i = 0; i < train_->size(); ++i)
        train_buckets_.push_back(bucketing_.bucket_of(train_->source_length(i), train_->target_length(i) + 1));
      load_split(Split::dev, "valid");
      if (info_.has_test) load_split(Split::test, "test");
    });
  }

  void load_split(Split split, const std::string& name) const {
    const TokenCorpus ids(path_in(data_dir_, name + ".ids"), info_.model_vocab());
    const auto src = read_lines(path_in(data_dir_, name + "." + info_.src_lang));
    const auto tgt = read_lines(path_in(data_dir_, name + "." + info_.tgt_lang));
    if (src.size() != ids.size() || tgt.size() != ids.size())
      throw Error(path_in(data_dir_, name + ".ids") + ": holds " + std::to_string(ids.size()) +
                  " pairs, its text files " + std::to_string(src.size()) + " and " + std::to_string(tgt.size()) +
                  " lines: prepare the corpus again");
    auto& out = examples_[static_cast<int>(split)];
    for (std::size_t i = 0; i < ids.size(); ++i) out.push_back({ids.source(i), ids.target(i), src[i], tgt[i]});
  }

  TextCorpusInfo info_;
  std::string data_dir_;
  Bucketing bucketing_;
  Subwords source_model_;
  std::optional<Subwords> target_model_;  // none: joint
  mutable std::once_flag loaded_;
  mutable std::optional<TokenCorpus> train_;
  mutable std::vector<std::optional<std::size_t>> train_buckets_;
  mutable std::array<std::vector<Example>, 3> examples_;  // by Split; train stays empty
};

template <class T>
T get(const json& j, const char* key, const std::string& origin) {
  const json& value = json_field(j, key, origin);
  try {
    return value.get<T>();
  } catch (const json::exception&) {
    throw Error(origin + ": \"" + key + "\" has the wrong type");
  }
}

}  // namespace

std::string TextCorpusInfo::source_model_file() const { return joint_vocab ? "spm.model" : "spm." + src_lang + ".model"; }
std::string TextCorpusInfo::target_model_file() const { return joint_vocab ? "spm.model" : "spm." + tgt_lang + ".model"; }

std::string text_corpus_info_to_json(const TextCorpusInfo& info) {
  json j = {{"format", "kiln-text-corpus-1"},
            {"src_lang", info.src_lang},
            {"tgt_lang", info.tgt_lang},
            {"vocab", info.joint_vocab ? "joint" : "separate"},
            {"source_vocab", info.source_vocab},
            {"target_vocab", info.target_vocab},
            {"max_len", info.max_len},
            {"bucket_lengths", info.bucket_lengths},
            {"fingerprint", info.fingerprint},
            {"summary", info.summary},
            {"has_test", info.has_test}};
  if (!info.data_dir.empty()) j["data_dir"] = info.data_dir;
  return j.dump(2) + "\n";
}

TextCorpusInfo text_corpus_info_from_json(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(origin + ": not JSON: " + e.what());
  }
  if (!j.is_object() || get<std::string>(j, "format", origin) != "kiln-text-corpus-1")
    throw Error(origin + ": not a kiln text corpus description (format kiln-text-corpus-1)");
  TextCorpusInfo info;
  info.src_lang = get<std::string>(j, "src_lang", origin);
  info.tgt_lang = get<std::string>(j, "tgt_lang", origin);
  const auto vocab = get<std::string>(j, "vocab", origin);
  if (vocab != "joint" && vocab != "separate") throw Error(origin + ": \"vocab\" must be joint or separate");
  info.joint_vocab = vocab == "joint";
  info.source_vocab = get<int64_t>(j, "source_vocab", origin);
  info.target_vocab = get<int64_t>(j, "target_vocab", origin);
  info.max_len = get<int64_t>(j, "max_len", origin);
  info.bucket_lengths = get<std::vector<int64_t>>(j, "bucket_lengths", origin);
  info.fingerprint = get<std::string>(j, "fingerprint", origin);
  info.summary = get<std::string>(j, "summary", origin);
  info.has_test = get<bool>(j, "has_test", origin);
  if (j.contains("data_dir")) info.data_dir = get<std::string>(j, "data_dir", origin);
  const auto bad = [&](const std::string& what) { return Error(origin + ": " + what); };
  if (info.src_lang.empty() || info.tgt_lang.empty() || info.src_lang == info.tgt_lang)
    throw bad("the source and target languages must be two different names");
  if (info.source_vocab < 8 || info.target_vocab < 8 || info.source_vocab > (int64_t{1} << 24) ||
      info.target_vocab > (int64_t{1} << 24))
    throw bad("vocabulary sizes out of range");
  if (info.max_len < 1 || info.max_len > 4096) throw bad("\"max_len\" out of range");
  if (info.bucket_lengths.empty() || info.bucket_lengths.back() != info.max_len)
    throw bad("\"bucket_lengths\" must end at max_len");
  for (size_t i = 0; i < info.bucket_lengths.size(); ++i)
    if (info.bucket_lengths[i] < 1 || (i > 0 && info.bucket_lengths[i] <= info.bucket_lengths[i - 1]))
      throw bad("\"bucket_lengths\" must be positive and ascending");
  return info;
}

std::unique_ptr<Task> open_text_task(const std::string& dir) {
  const std::string path = path_in(dir, "corpus.json");
  if (!fs::exists(path)) throw Error(path + " does not exist: not a text task's checkpoint or prepared corpus");
  return std::make_unique<TextTask>(text_corpus_info_from_json(read_file(path, kMiB, "corpus.json"), path), dir);
}

}  // namespace kiln::models
