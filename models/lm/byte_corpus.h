#pragma once
// A plain-text corpus as byte tokens (every byte value an id, 256 in all), as
// nanoGPT's character-level models and llm.c's tokens: any file trains, UTF-8
// or not, with nothing to learn first. A corpus is a file, or every regular
// file of a folder (its tree, in path order) with a line break between files.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/tensor/tensor.h"

namespace kiln::models {

inline constexpr int64_t kByteVocab = 256;

struct ByteCorpus {
  std::string origin;  // the path it was read from, for messages
  std::vector<uint8_t> bytes;
};

// kiln::Error naming the path: missing, unreadable, a folder without files, or
// fewer than `min_bytes` bytes in all (one training window needs context + 1).
ByteCorpus read_byte_corpus(const std::string& path, int64_t min_bytes);

// A training batch i32[rows, len + 1] of windows starting anywhere in the
// corpus, drawn from (seed, step) alone, so a resumed run draws what the
// uninterrupted one would. The corpus holds at least len + 1 bytes.
Tensor window_batch(const ByteCorpus& corpus, int64_t rows, int64_t len, uint64_t seed, int64_t step);

// The dev set: the corpus cut into consecutive windows of len + 1 tokens that
// overlap by one (each token but the first predicted once), at most
// `max_windows` of them (a whole number of batches) spread evenly over the
// corpus, in batches of `rows` (fewer when the corpus has fewer windows).
struct DevBatches {
  std::vector<Tensor> batches;
  int64_t windows = 0;
};
DevBatches dev_batches(const ByteCorpus& corpus, int64_t rows, int64_t len, int64_t max_windows);

// The ids of `text`'s bytes, and the bytes of ids in [0, 256).
std::vector<int32_t> byte_ids(const std::string& text);
std::string bytes_of(const std::vector<int32_t>& ids);

}  // namespace kiln::models
