#pragma once
// A corpus as subword ids in one compact binary file with an offset index, memory-
// mapped when read (fairseq's indexed datasets' idea): training reads the pairs it
// batches straight from the page cache, so its memory is set by the model, not by
// the corpus. Layout, little-endian:
//   "KILNIDS1"  u32 id_bytes (2 or 4)  u32 vocab  u64 pairs  u64 src_ids  u64 tgt_ids
//   u64 src_offsets[pairs + 1]  u64 tgt_offsets[pairs + 1]   (in ids, from 0)
//   src ids (id_bytes each)  tgt ids
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kiln::models {

// Writes the pairs atomically; ids must be below vocab (2 bytes an id when vocab <= 65536).
void write_token_corpus(const std::string& path, int64_t vocab, const std::vector<std::vector<int32_t>>& source,
                        const std::vector<std::vector<int32_t>>& target);

class TokenCorpus {
 public:
  // Maps PATH and checks it whole before any use: kiln::Error naming the file for a
  // missing or truncated file, a wrong marker, offsets out of order or past the data,
  // or an id not below `vocab` (the vocabulary the ids must come from).
  TokenCorpus(const std::string& path, int64_t vocab);
  TokenCorpus(TokenCorpus&&) noexcept;
  TokenCorpus& operator=(TokenCorpus&&) noexcept;
  TokenCorpus(const TokenCorpus&) = delete;
  TokenCorpus& operator=(const TokenCorpus&) = delete;
  ~TokenCorpus();

  std::size_t size() const { return pairs_; }
  int64_t source_length(std::size_t i) const { return static_cast<int64_t>(src_offsets_[i + 1] - src_offsets_[i]); }
  int64_t target_length(std::size_t i) const { return static_cast<int64_t>(tgt_offsets_[i + 1] - tgt_offsets_[i]); }
  std::vector<int32_t> source(std::size_t i) const { return ids(src_ids_, src_offsets_[i], src_offsets_[i + 1]); }
  std::vector<int32_t> target(std::size_t i) const { return ids(tgt_ids_, tgt_offsets_[i], tgt_offsets_[i + 1]); }

 private:
  std::vector<int32_t> ids(const unsigned char* base, uint64_t begin, uint64_t end) const;

  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  std::size_t pairs_ = 0;
  uint32_t id_bytes_ = 4;
  const uint64_t* src_offsets_ = nullptr;
  const uint64_t* tgt_offsets_ = nullptr;
  const unsigned char* src_ids_ = nullptr;
  const unsigned char* tgt_ids_ = nullptr;
};

}  // namespace kiln::models
