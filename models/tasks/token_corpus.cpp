#include "models/tasks/token_corpus.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"

namespace kiln::models {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'I', 'D', 'S', '1'};
constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 8;

template <class T>
void append(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T load(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}

// The offsets of sequences laid end to end, from 0.
std::string offsets(const std::vector<std::vector<int32_t>>& seqs, uint64_t& total) {
  std::string out;
  total = 0;
  append<uint64_t>(out, 0);
  for (const auto& s : seqs) append<uint64_t>(out, total += s.size());
  return out;
}

std::string packed(const std::vector<std::vector<int32_t>>& seqs, uint32_t id_bytes, int64_t vocab) {
  std::string out;
  for (const auto& s : seqs) {
    for (int32_t id : s) {
      if (id < 0 || id >= vocab) throw Error("token corpus: id " + std::to_string(id) + " outside the vocabulary");
      if (id_bytes == 2) append<uint16_t>(out, static_cast<uint16_t>(id));
      else append<int32_t>(out, id);
    }
  }
  return out;
}

}  // namespace

void write_token_corpus(const std::string& path, int64_t vocab, const std::vector<std::vector<int32_t>>& source,
                        const std::vector<std::vector<int32_t>>& target) {
  if (source.size() != target.size()) throw Error("token corpus: source and target counts differ");
  const uint32_t id_bytes = vocab <= 65536 ? 2 : 4;
  uint64_t src_total = 0, tgt_total = 0;
  const std::string src_offsets = offsets(source, src_total), tgt_offsets = offsets(target, tgt_total);
  std::string header(kMagic, sizeof kMagic);
  append<uint32_t>(header, id_bytes);
  append<uint32_t>(header, static_cast<uint32_t>(vocab));
  append<uint64_t>(header, source.size());
  append<uint64_t>(header, src_total);
  append<uint64_t>(header, tgt_total);
  const std::string src_ids = packed(source, id_bytes, vocab), tgt_ids = packed(target, id_bytes, vocab);
  const std::string_view pieces[] = {header, src_offsets, tgt_offsets, src_ids, tgt_ids};
  write_file_atomically(path, pieces);
}

TokenCorpus::TokenCorpus(const std::string& path, int64_t vocab) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw Error(path + ": not a regular file");
  }
  map_bytes_ = static_cast<std::size_t>(st.st_size);
  if (map_bytes_ < kHeaderBytes) {
    close(fd);
    throw Error(path + ": truncated token corpus (" + std::to_string(map_bytes_) + " bytes)");
  }
  map_ = mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw Error("cannot map " + path + ": " + std::strerror(errno));
  }
  const auto* bytes = static_cast<const unsigned char*>(map_);
  const auto fail = [&](const std::string& why) {
    munmap(map_, map_bytes_);
    map_ = nullptr;
    return Error(path + ": not a kiln token corpus: " + why);
  };
  if (std::memcmp(bytes, kMagic, sizeof kMagic) != 0) throw fail("wrong marker");
  id_bytes_ = load<uint32_t>(bytes + 8);
  const auto file_vocab = load<uint32_t>(bytes + 12);
  const auto pairs = load<uint64_t>(bytes + 16), src_total = load<uint64_t>(bytes + 24),
             tgt_total = load<uint64_t>(bytes + 32);
  if (id_bytes_ != 2 && id_bytes_ != 4) throw fail("id size " + std::to_string(id_bytes_));
  if (static_cast<int64_t>(file_vocab) != vocab)
    throw fail("its vocabulary has " + std::to_string(file_vocab) + " ids, the subword model " + std::to_string(vocab));
  // Sizes in 128 bits: a corrupt header must not wrap the check.
  const unsigned __int128 need = kHeaderBytes + (static_cast<unsigned __int128>(pairs) + 1) * 16 +
                                 (static_cast<unsigned __int128>(src_total) + tgt_total) * id_bytes_;
  if (need != map_bytes_)
    throw fail("its header describes " + std::to_string(static_cast<uint64_t>(need)) + " bytes, the file has " +
               std::to_string(map_bytes_));
  pairs_ = static_cast<std::size_t>(pairs);
  src_offsets_ = reinterpret_cast<const uint64_t*>(bytes + kHeaderBytes);
  tgt_offsets_ = src_offsets_ + pairs_ + 1;
  src_ids_ = reinterpret_cast<const unsigned char*>(tgt_offsets_ + pairs_ + 1);
  tgt_ids_ = src_ids_ + src_total * id_bytes_;
  for (const auto& [offs, total] : {std::pair{src_offsets_, src_total}, std::pair{tgt_offsets_, tgt_total}}) {
    if (offs[0] != 0 || offs[pairs_] != total) throw fail("offsets do not span the ids");
    for (std::size_t i = 0; i < pairs_; ++i)
      if (offs[i + 1] < offs[i]) throw fail("offsets out of order at pair " + std::to_string(i));
  }
  for (const auto& [base, total] : {std::pair{src_ids_, src_total}, std::pair{tgt_ids_, tgt_total}}) {
    for (uint64_t i = 0; i < total; ++i) {
      const int64_t id = id_bytes_ == 2 ? load<uint16_t>(base + 2 * i) : load<int32_t>(base + 4 * i);
      if (id < 0 || id >= vocab) throw fail("id " + std::to_string(id) + " outside the vocabulary");
    }
  }
}

TokenCorpus::TokenCorpus(TokenCorpus&& other) noexcept { *this = std::move(other); }

TokenCorpus& TokenCorpus::operator=(TokenCorpus&& other) noexcept {
  if (this != &other) {
    if (map_) munmap(map_, map_bytes_);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = other.map_bytes_;
    pairs_ = other.pairs_;
    id_bytes_ = other.id_bytes_;
    src_offsets_ = other.src_offsets_;
    tgt_offsets_ = other.tgt_offsets_;
    src_ids_ = other.src_ids_;
    tgt_ids_ = other.tgt_ids_;
  }
  return *this;
}

TokenCorpus::~TokenCorpus() {
  if (map_) munmap(map_, map_bytes_);
}

std::vector<int32_t> TokenCorpus::ids(const unsigned char* base, uint64_t begin, uint64_t end) const {
  std::vector<int32_t> out;
  out.reserve(end - begin);
  for (uint64_t i = begin; i < end; ++i)
    out.push_back(id_bytes_ == 2 ? load<uint16_t>(base + 2 * i) : load<int32_t>(base + 4 * i));
  return out;
}

}  // namespace kiln::models
