#pragma once
// A training task: its examples (token ids and texts per split), its batches and its
// tokenizer. Two tasks: `copy` (the Annotated Transformer's synthetic task) and `de-en`
// (German to English pairs from Debian's trans-de-en dictionary, sentencepiece subwords).
//
// Target sequences. An example's `tgt` holds the target tokens without bos and eos.
// The decoder sees the full sequence  full = [bos] + tgt (+ [eos] when eos_id() >= 0):
//   tgt_in  = full[0 : n-1]   (starts with bos; the decoder's input)
//   tgt_out = full[1 : n]     (what each position predicts; ends with eos if there is one)
// de-en: tgt_in = bos + tgt, tgt_out = tgt + eos (len(tgt) + 1 positions).
// copy: every sequence starts with token 1, and 1 is also bos, so an example is
//   src = seq (10 tokens), tgt = seq[1:10] (9 tokens), tgt_in = seq[0:9], tgt_out = seq[1:10];
//   there is no eos: decoding starts from [1] and generates exactly len(src) - 1 tokens.
//
// Generated output. A decoder starts from [bos] and generates at most
// max_output_len(example) tokens (for de-en the last may be eos), so a decoder graph
// with tgt_len >= max_output_len covers it. decode() takes the generated tokens
// (anything from the first eos on is ignored); an exact match means generated == tgt.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/tensor/tensor.h"

namespace kiln::models {

enum class Split { train, dev, test };
Split parse_split(const std::string& name);  // "train" | "dev" | "test"; kiln::Error otherwise
std::string split_name(Split split);

// The train split's size, which the text task's recipe is fitted to.
struct CorpusSize {
  int64_t pairs = 0;
  int64_t target_tokens = 0;  // eos included
};

struct Example {
  std::vector<int32_t> src, tgt;   // tgt without bos/eos (see above)
  std::string src_text, tgt_text;  // decode(tgt) == tgt_text (de-en: up to unknown characters)
};

// One batch: i32 tensors padded with pad_id. Batch shapes come from a small fixed set
// of (B, S, T) bucket shapes, so a trainer compiles one executable per shape and caches it.
// Rows past the real examples (a bucket's last batch) are filler rows: src = [bos, pad...],
// tgt_in = [bos, pad...], tgt_out all pad, so the loss ignores them and no attention row
// is fully masked.
struct Batch {
  Tensor src;                              // [B,S]
  Tensor tgt_in;                           // [B,T]  full[0:n-1] (bos + tgt)
  Tensor tgt_out;                          // [B,T]  full[1:n]   (tgt + eos; copy: no eos)
  int64_t src_tokens = 0, tgt_tokens = 0;  // non-pad tokens of src and of tgt_out
  int64_t rows = 0;                        // real examples (the first `rows` rows); the rest are filler
};

// One epoch's training batches, each made when it is asked for: an epoch of a large
// corpus as tensors would take more memory than the model.
class TrainEpoch {
 public:
  virtual ~TrainEpoch() = default;
  virtual std::size_t size() const = 0;
  virtual Batch batch(std::size_t i) const = 0;  // 0 <= i < size()
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;  // "copy" | "de-en" | "text"
  virtual int64_t vocab_size() const = 0;
  virtual int32_t pad_id() const = 0;
  virtual int32_t bos_id() const = 0;
  virtual int32_t eos_id() const = 0;  // -1: fixed-length outputs (copy)
  // Ids that are never part of a target (padding, unknown, a bos that is not
  // also a content token): decoders never produce them.
  virtual std::vector<int32_t> never_generated() const = 0;
  // Most tokens a decoder generates after bos for this example (see above).
  virtual int64_t max_output_len(const Example& example) const = 0;
  // The examples of a split. dev/test are fixed; copy's train set is generated per
  // batch, so examples(Split::train) is empty for copy.
  virtual const std::vector<Example>& examples(Split split) const = 0;
  // Training batches for one epoch, shuffled, deterministic in (seed, epoch).
  // copy: an endless stream of one batch per call (pass the step as the epoch).
  // tokens_per_batch sets B per bucket: the largest power of two <= tokens_per_batch / L
  // for a bucket of length L (at least 1).
  virtual std::unique_ptr<TrainEpoch> train_epoch(uint64_t seed, int64_t epoch, int64_t tokens_per_batch) const = 0;
  // The train split's size; none for a task whose recipe does not depend on it
  // (copy's endless stream, de-en's fixed dictionary).
  virtual std::optional<CorpusSize> train_size() const { return std::nullopt; }
  // Every batch of train_epoch, made (tests, `kiln batches`).
  std::vector<Batch> train_batches(uint64_t seed, int64_t epoch, int64_t tokens_per_batch) const;
  // Every example of the split in exactly one batch, bucketed like training: pairs of
  // (indices into examples(split), ascending; batch whose first rows are those examples).
  virtual std::vector<std::pair<std::vector<size_t>, Batch>> eval_batches(Split split,
                                                                          int64_t tokens_per_batch) const = 0;
  // Source text -> ids (no bos/eos). kiln::Error on empty text or (copy) a bad token.
  virtual std::vector<int32_t> encode(const std::string& text) const = 0;
  // Generated target ids -> text (stops at eos, skips pad and bos). copy: the whole
  // sequence, i.e. its start token 1 followed by ids, as whitespace-separated integers.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;
};

struct CopyTaskOptions {
  int64_t vocab = 11;       // tokens 0..vocab-1; 0 pads, 1 starts every sequence
  int64_t length = 10;      // sequence length, start token included
  int64_t dev_size = 200;   // fixed sets, drawn from their own seeds; the training
  int64_t test_size = 500;  // stream never yields a dev or test sequence
};
std::unique_ptr<Task> make_copy_task(const CopyTaskOptions& options = {});

struct DeEnOptions {
  std::string data_path = "/usr/share/trans/de-en";  // kiln::Error naming it and trans-de-en if unreadable
  std::string spm_model_path;  // learned on the train split and written here (atomically) unless it exists
  int64_t vocab_size = 8000;   // joint subword vocabulary when learning
  int64_t max_len = 64;        // longest src or tgt_out in subwords; longer pairs are dropped
  int64_t dev_permille = 3;    // share of German headwords (by hash) in dev and in test
  int64_t test_permille = 3;
};
// Loads the subword model if spm_model_path exists, else reads and splits the dictionary
// and learns it there. The dictionary is read (again) and encoded when examples are first
// needed (examples(), train_batches(), eval_batches(): the missing-package error may come
// from there), so encode/decode with a saved model need no data package.
std::unique_ptr<Task> make_de_en_task(const DeEnOptions& options);

}  // namespace kiln::models
