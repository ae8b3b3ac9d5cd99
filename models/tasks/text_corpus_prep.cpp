#include "models/tasks/text_corpus_prep.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>
#include <unordered_map>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/tasks/subwords.h"
#include "models/tasks/token_corpus.h"
#include "models/run/progress.h"

namespace kiln::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The longest length chosen from the data: the positional encodings' default.
constexpr int64_t kMaxAutoLen = 256;

struct SplitSpec {
  const char* name;  // train, valid, test
  const char* flag;
  ParallelFiles files;
};

std::vector<SplitSpec> split_specs(const TextTaskOptions& o) {
  std::vector<SplitSpec> splits = {{"train", "--train", parallel_files("--train", o.train, o.src_lang, o.tgt_lang)},
                                   {"valid", "--valid", parallel_files("--valid", o.valid, o.src_lang, o.tgt_lang)}};
  if (!o.test.empty()) splits.push_back({"test", "--test", parallel_files("--test", o.test, o.src_lang, o.tgt_lang)});
  if (!o.spm_model.empty() && !fs::is_regular_file(o.spm_model))
    throw Error("--spm-model " + o.spm_model + " does not exist or is not a file");
  return splits;
}

std::string fingerprint(const TextTaskOptions& o, const std::vector<SplitSpec>& splits) {
  const auto file = [](const std::string& path) -> json {
    if (path.empty()) return nullptr;
    const auto time = fs::last_write_time(path).time_since_epoch();
    return {fs::absolute(path).lexically_normal().string(), fs::file_size(path),
            std::chrono::duration_cast<std::chrono::nanoseconds>(time).count()};
  };
  json j = {{"src_lang", o.src_lang},   {"tgt_lang", o.tgt_lang}, {"vocab_size", o.vocab_size},
            {"separate", o.separate_vocab}, {"spm_model", file(o.spm_model)}, {"max_len", o.max_len},
            {"max_line_bytes", o.limits.max_line_bytes}, {"max_ratio", o.limits.max_ratio}};
  for (const SplitSpec& s : splits)
    j[s.name] = {file(s.files.tsv), file(s.files.source), file(s.files.target)};
  return j.dump();
}

// Both sides' texts of an evenly spaced sample of the pairs, at most kSubwordSampleTexts.
std::vector<std::string> sample(const std::vector<std::string>& a, const std::vector<std::string>* b) {
  const std::size_t stride = subword_sample_stride(a.size(), b ? 2 : 1);
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < a.size(); i += stride) {
    texts.push_back(a[i]);
    if (b) texts.push_back((*b)[i]);
  }
  return texts;
}

// Encodes every text on all cores; ids >= 4 are moved by `shift` (the target
// model's pieces after the source model's, with separate vocabularies). Pieces
// never cross a space (sentencepiece splits at whitespace before segmenting), so a
// text's ids are its words' ids: each distinct word is segmented once per thread.
// Thread 0 alone reports to `progress`, a text of each thread's for each of its own.
std::vector<std::vector<int32_t>> encode_all(const Subwords& model, const std::vector<std::string>& texts,
                                             int32_t shift, ItemProgress& progress) {
  std::vector<std::vector<int32_t>> ids(texts.size());
  const std::size_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  std::size_t reported = 0;  // thread 0's, read after the join
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::unordered_map<std::string_view, std::vector<int32_t>> words;
      for (std::size_t i = t; i < texts.size(); i += threads) {
        if (t == 0) {
          const std::size_t step = std::min(threads, texts.size() - reported);
          progress.advance(static_cast<int64_t>(step));
          reported += step;
        }
        std::string_view text = texts[i];
        while (!text.empty()) {
          const std::string_view word = text.substr(0, text.find(' '));
          text.remove_prefix(std::min(text.size(), word.size() + 1));
          auto it = words.find(word);
          if (it == words.end()) {
            std::vector<int32_t> pieces = model.encode(std::string(word));
            if (shift != 0)
              for (int32_t& id : pieces) id += id >= 4 ? shift : 0;
            it = words.emplace(word, std::move(pieces)).first;
          }
          ids[i].insert(ids[i].end(), it->second.begin(), it->second.end());
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  progress.advance(static_cast<int64_t>(texts.size() - reported));
  return ids;
}

struct EncodedSplit {
  ParallelText text;
  std::vector<std::vector<int32_t>> source, target;
};

// Length in decoder-or-encoder positions: the longer side, the target with its eos.
int64_t positions(const EncodedSplit& s, std::size_t i) {
  return std::max<int64_t>(static_cast<int64_t>(s.source[i].size()), static_cast<int64_t>(s.target[i].size()) + 1);
}

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

// Buckets at the eighths of the train lengths (multiples of 4), then max_len: few
// shapes to compile, little padding.
std::vector<int64_t> choose_buckets(const EncodedSplit& train, int64_t max_len) {
  std::vector<int64_t> lengths;
  for (std::size_t i = 0; i < train.source.size(); ++i) lengths.push_back(std::min(positions(train, i), max_len));
  std::sort(lengths.begin(), lengths.end());
  std::vector<int64_t> buckets;
  for (int k = 1; k < 8; ++k) {
    const int64_t len = std::min(max_len, round_up(lengths[lengths.size() * k / 8], 4));
    if (buckets.empty() || len > buckets.back()) buckets.push_back(len);
  }
  if (buckets.empty() || buckets.back() < max_len) buckets.push_back(max_len);
  return buckets;
}

// Drops pairs longer than max_len; returns how many.
int64_t drop_longer(EncodedSplit& s, int64_t max_len) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < s.source.size(); ++i) {
    if (positions(s, i) > max_len) continue;
    if (i == kept) {  // nothing dropped yet: a self-move would empty it
      ++kept;
      continue;
    }
    s.source[kept] = std::move(s.source[i]);
    s.target[kept] = std::move(s.target[i]);
    if (!s.text.source.empty()) {
      s.text.source[kept] = std::move(s.text.source[i]);
      s.text.target[kept] = std::move(s.text.target[i]);
    }
    ++kept;
  }
  const auto dropped = static_cast<int64_t>(s.source.size() - kept);
  for (auto* v : {&s.text.source, &s.text.target}) v->resize(std::min(v->size(), kept));
  s.source.resize(kept);
  s.target.resize(kept);
  return dropped;
}

std::string lines(const std::vector<std::string>& texts) {
  std::string out;
  for (const std::string& t : texts) out += t + "\n";
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Writes corpus.json and the subword models into checkpoint_dir, corpus.json naming data_dir.
void write_checkpoint_copy(TextCorpusInfo info, const std::string& data_dir, const std::string& checkpoint_dir) {
  info.data_dir = fs::absolute(data_dir).lexically_normal().string();
  std::vector<FileBytes> files;
  for (const std::string& model : {info.source_model_file(), info.target_model_file()}) {
    if (!files.empty() && model == info.source_model_file()) break;  // joint: one model
    files.push_back({path_in(checkpoint_dir, model), read_file(path_in(data_dir, model), 256 * kMiB, "a subword model")});
  }
  files.push_back({path_in(checkpoint_dir, "corpus.json"), text_corpus_info_to_json(info)});
  write_files_atomically(files);
}

}  // namespace

void check_text_task_options(const TextTaskOptions& o) {
  if (o.train.empty() || o.valid.empty()) throw Error("--train and --valid are both needed for a text task");
  if (o.src_lang.empty() || o.tgt_lang.empty()) throw Error("--src-lang and --tgt-lang are needed for a text task");
  if (o.src_lang == o.tgt_lang) throw Error("--src-lang and --tgt-lang must differ");
  for (const std::string& lang : {o.src_lang, o.tgt_lang})
    if (lang.find_first_of("/\\ .") != std::string::npos)
      throw Error("language '" + lang + "' must be a plain name such as en (it names files)");
  if (!o.spm_model.empty() && o.separate_vocab) throw Error("--spm-model gives one joint model: not with --vocab separate");
  if (o.vocab_size < 8) throw Error("--vocab-size must be at least 8");
  if (o.max_len < 0 || o.max_len > 4096) throw Error("--max-len must be between 1 and 4096");
  if (o.limits.max_line_bytes < 1 || o.limits.max_ratio < 1)
    throw Error("--max-line-bytes must be positive and --max-ratio at least 1");
}

std::string text_corpus_fingerprint(const TextTaskOptions& opts) {
  check_text_task_options(opts);
  return fingerprint(opts, split_specs(opts));
}

TextCorpusInfo prepare_text_corpus(const TextTaskOptions& o, const std::string& data_dir,
                                   const std::string& checkpoint_dir, std::ostream& log) {
  check_text_task_options(o);
  const std::vector<SplitSpec> splits = split_specs(o);
  const std::string key = fingerprint(o, splits);

  const std::string info_path = path_in(data_dir, "corpus.json");
  if (fs::exists(info_path)) {
    TextCorpusInfo info = text_corpus_info_from_json(read_file(info_path, kMiB, "corpus.json"), info_path);
    if (info.fingerprint == key) {
      log << "reusing the corpus prepared in " << data_dir << '\n';
      if (!checkpoint_dir.empty()) write_checkpoint_copy(info, data_dir, checkpoint_dir);
      return info;
    }
  }
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  fs::create_directories(data_dir, ec);
  if (ec) throw Error("cannot create " + data_dir + ": " + ec.message());
  fs::remove(info_path, ec);  // written last: a preparation cut short is never taken for a whole one

  // "preparing (12.3 s): WHAT..."
  const auto progress = [&](const std::string& what) {
    char at[32];
    std::snprintf(at, sizeof at, "%.1f s", seconds_since(start));
    log << "preparing (" << at << "): " << what << "..." << std::endl;
  };
  std::vector<EncodedSplit> encoded(splits.size());
  for (std::size_t s = 0; s < splits.size(); ++s) {
    progress(std::string("reading ") + splits[s].name);
    encoded[s].text = read_parallel_text(splits[s].files, o.limits);
    if (encoded[s].text.source.empty())
      throw Error(std::string(splits[s].flag) + " " + (s == 0 ? o.train : s == 1 ? o.valid : o.test) +
                  ": no pair is left after cleaning (" + std::to_string(encoded[s].text.lines) + " read; skipped: " +
                  encoded[s].text.skipped.str() + ")");
  }

  TextCorpusInfo info;
  info.src_lang = o.src_lang;
  info.tgt_lang = o.tgt_lang;
  info.joint_vocab = !o.separate_vocab;
  info.has_test = splits.size() == 3;
  info.fingerprint = key;
  const ParallelText& train_text = encoded[0].text;
  std::vector<std::pair<std::string, std::string>> models;  // file, bytes
  if (!o.spm_model.empty()) {
    models.emplace_back("spm.model", read_file(o.spm_model, 256 * kMiB, "a subword model"));
  } else if (info.joint_vocab) {
    progress("learning a joint subword model of " + std::to_string(o.vocab_size) + " pieces");
    models.emplace_back("spm.model", Subwords::learn(sample(train_text.source, &train_text.target), o.vocab_size));
  } else {
    progress("learning a subword model of " + std::to_string(o.vocab_size) + " pieces per language");
    models.emplace_back(info.source_model_file(), Subwords::learn(sample(train_text.source, nullptr), o.vocab_size));
    models.emplace_back(info.target_model_file(), Subwords::learn(sample(train_text.target, nullptr), o.vocab_size));
  }
  // A model the user gave is named as given, not as kiln's copy of it.
  const auto origin = [&](const std::string& file) { return o.spm_model.empty() ? file : "--spm-model " + o.spm_model; };
  const Subwords source_model(models[0].second, origin(models[0].first));
  const Subwords target_model(models.back().second, origin(models.back().first));
  info.source_vocab = source_model.size();
  info.target_vocab = target_model.size();
  const auto shift = static_cast<int32_t>(info.joint_vocab ? 0 : info.source_vocab - 4);

  for (std::size_t s = 0; s < splits.size(); ++s) {
    progress(std::string("encoding ") + splits[s].name + " (" + std::to_string(encoded[s].text.source.size()) +
             " pairs)");
    ItemProgress sentences(log, false, "encoded", "sentences", 2 * static_cast<int64_t>(encoded[s].text.source.size()));
    encoded[s].source = encode_all(source_model, encoded[s].text.source, 0, sentences);
    encoded[s].target = encode_all(target_model, encoded[s].text.target, shift, sentences);
    if (s == 0) {  // only valid's and test's text is kept (BLEU's references): the train text's memory goes
      std::vector<std::string>().swap(encoded[s].text.source);
      std::vector<std::string>().swap(encoded[s].text.target);
    }
  }
  int64_t longest = 0;
  for (const EncodedSplit& e : encoded)
    for (std::size_t i = 0; i < e.source.size(); ++i) longest = std::max(longest, positions(e, i));
  info.max_len = o.max_len > 0 ? o.max_len : std::min(kMaxAutoLen, round_up(longest, 8));

  std::vector<FileBytes> files;
  for (std::size_t s = 0; s < splits.size(); ++s) {
    const int64_t dropped = drop_longer(encoded[s], info.max_len);
    if (encoded[s].source.empty())
      throw Error(std::string(splits[s].flag) + ": no pair is left within --max-len " + std::to_string(info.max_len));
    const ParallelText& t = encoded[s].text;
    info.summary += std::string(info.summary.empty() ? "" : "; ") + splits[s].name + ": " + std::to_string(t.lines) +
                    " pairs read, " + std::to_string(encoded[s].source.size()) + " kept, skipped: " + t.skipped.str() +
                    (dropped > 0 ? ", " + std::to_string(dropped) + " longer than " + std::to_string(info.max_len) +
                                       " subwords"
                                 : "");
    if (s > 0) {
      files.push_back({path_in(data_dir, std::string(splits[s].name) + "." + o.src_lang), lines(t.source)});
      files.push_back({path_in(data_dir, std::string(splits[s].name) + "." + o.tgt_lang), lines(t.target)});
    }
  }
  info.bucket_lengths = choose_buckets(encoded[0], info.max_len);
  for (const auto& [file, bytes] : models) files.push_back({path_in(data_dir, file), bytes});
  write_files_atomically(files);
  progress("writing " + data_dir);
  for (std::size_t s = 0; s < splits.size(); ++s)
    write_token_corpus(path_in(data_dir, std::string(splits[s].name) + ".ids"), info.model_vocab(), encoded[s].source,
                       encoded[s].target);
  write_file_atomically(info_path, text_corpus_info_to_json(info));
  char took[64];
  std::snprintf(took, sizeof took, "%.1f s", seconds_since(start));
  log << "prepared " << data_dir << " in " << took << ": " << info.summary << "; vocabulary "
      << info.model_vocab() << ", max length " << info.max_len << ", buckets";
  for (int64_t len : info.bucket_lengths) log << ' ' << len;
  log << '\n';
  if (!checkpoint_dir.empty()) write_checkpoint_copy(info, data_dir, checkpoint_dir);
  return info;
}

TextCorpusInfo use_prepared_corpus(const std::string& data_dir, const std::string& checkpoint_dir) {
  const std::string path = path_in(data_dir, "corpus.json");
  if (!fs::exists(path))
    throw Error("--prepared " + data_dir + ": no corpus.json there (prepare one with kiln prepare, or give --train)");
  TextCorpusInfo info = text_corpus_info_from_json(read_file(path, kMiB, "corpus.json"), path);
  write_checkpoint_copy(info, data_dir, checkpoint_dir);
  return info;
}

}  // namespace kiln::models
