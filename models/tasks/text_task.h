#pragma once
// The text task: translation between two languages of a user's own parallel
// corpus (parallel_text.h), prepared once (text_corpus_prep.h) and then read as
// subword ids from memory-mapped files (token_corpus.h).
//
// A prepared directory holds corpus.json (what the corpus is: its languages, its
// subword models and their id ranges, the length limit and bucket shapes, where
// its files came from and what cleaning skipped), the subword model(s), and per
// split SPLIT.ids plus, for valid and test, the cleaned text (SPLIT.SRC, SPLIT.TGT)
// that BLEU scores against. A checkpoint directory holds a copy of corpus.json
// naming the prepared directory ("data_dir") and the subword models: all that
// translating needs; evaluating and training read the prepared directory too.
//
// Vocabulary: one joint sentencepiece model, or one per language. With two, the
// model's ids are the source model's, then the target model's pieces after its 4
// special ids (target id t >= 4 is model id source_vocab + t - 4); decoders never
// produce a source-only id.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/tasks/batching.h"
#include "models/tasks/task.h"

namespace kiln::models {

inline const std::string kTextTask = "text";

// What corpus.json records about a prepared corpus.
struct TextCorpusInfo {
  std::string src_lang, tgt_lang;
  bool joint_vocab = true;
  int64_t source_vocab = 0, target_vocab = 0;  // pieces of each model (equal when joint)
  int64_t max_len = 0;                         // longest source or target (with eos) in subwords
  std::vector<int64_t> bucket_lengths;         // square (L, L) bucket shapes, ascending
  std::string fingerprint;                     // the inputs and settings it was prepared from
  std::string data_dir;                        // where SPLIT.ids live ("" : beside corpus.json)
  std::string summary;                         // per split: pairs read, kept, skipped by reason
  bool has_test = false;

  int64_t model_vocab() const { return joint_vocab ? source_vocab : source_vocab + target_vocab - 4; }
  std::string source_model_file() const;  // "spm.model" or "spm.SRC.model"
  std::string target_model_file() const;
};

std::string text_corpus_info_to_json(const TextCorpusInfo& info);
// kiln::Error naming `origin` and the key for anything missing or out of range.
TextCorpusInfo text_corpus_info_from_json(const std::string& json, const std::string& origin);

// The task of a prepared or checkpoint directory (corpus.json and the subword
// models there; the ids in its data_dir, opened when examples or batches are first
// needed, so translating needs no corpus). kiln::Error naming the file for anything
// missing or corrupt.
std::unique_ptr<Task> open_text_task(const std::string& dir);

// DIR/FILE: a file of a prepared corpus or checkpoint directory.
std::string path_in(const std::string& dir, const std::string& file);

}  // namespace kiln::models
