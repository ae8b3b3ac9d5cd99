#include "models/lm/byte_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/ir/error.h"
#include "models/tasks/counter_rng.h"

namespace kiln::models {
namespace {

namespace fs = std::filesystem;

void append_file(const fs::path& path, std::vector<uint8_t>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read " + path.string());
  out.insert(out.end(), std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error("cannot read " + path.string());
}

// The regular files under `dir`, in path order.
std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file()) files.push_back(it->path());
  if (ec) throw Error("cannot list " + dir.string() + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

Tensor windows_tensor(const ByteCorpus& c, const std::vector<int64_t>& starts, int64_t len) {
  auto a = Tensor::I32::from_shape({starts.size(), static_cast<size_t>(len + 1)});
  for (size_t r = 0; r < starts.size(); ++r)
    for (int64_t t = 0; t <= len; ++t) a(r, static_cast<size_t>(t)) = c.bytes[static_cast<size_t>(starts[r] + t)];
  return Tensor(std::move(a));
}

}  // namespace

ByteCorpus read_byte_corpus(const std::string& path, int64_t min_bytes) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error(path + ": no such file or folder");
  ByteCorpus c{path, {}};
  if (fs::is_directory(path, ec)) {
    const std::vector<fs::path> files = files_under(path);
    if (files.empty()) throw Error(path + ": the folder holds no files");
    for (const fs::path& f : files) {
      if (!c.bytes.empty()) c.bytes.push_back('\n');
      append_file(f, c.bytes);
    }
  } else {
    append_file(path, c.bytes);
  }
  if (static_cast<int64_t>(c.bytes.size()) < min_bytes)
    throw Error(path + ": " + std::to_string(c.bytes.size()) + " bytes, fewer than the " + std::to_string(min_bytes) +
                " one window of the context needs (a shorter --context trains on it)");
  return c;
}

Tensor window_batch(const ByteCorpus& corpus, int64_t rows, int64_t len, uint64_t seed, int64_t step) {
  const auto starts_count = static_cast<uint64_t>(static_cast<int64_t>(corpus.bytes.size()) - len);
  CounterRng rng(seed, static_cast<uint64_t>(step));
  std::vector<int64_t> starts(static_cast<size_t>(rows));
  for (int64_t& s : starts) s = static_cast<int64_t>(rng.below(starts_count));
  return windows_tensor(corpus, starts, len);
}

DevBatches dev_batches(const ByteCorpus& corpus, int64_t rows, int64_t len, int64_t max_windows) {
  const int64_t all = (static_cast<int64_t>(corpus.bytes.size()) - 1) / len;
  const int64_t per_batch = std::min(rows, all);
  const int64_t n = std::min(all, std::max(max_windows, per_batch)) / per_batch * per_batch;
  DevBatches out{{}, n};
  for (int64_t first = 0; first < n; first += per_batch) {
    std::vector<int64_t> starts;
    for (int64_t i = first; i < first + per_batch; ++i) starts.push_back(i * all / n * len);  // spread evenly
    out.batches.push_back(windows_tensor(corpus, starts, len));
  }
  return out;
}

std::vector<int32_t> byte_ids(const std::string& text) {
  std::vector<int32_t> ids;
  for (const char c : text) ids.push_back(static_cast<uint8_t>(c));
  return ids;
}

std::string bytes_of(const std::vector<int32_t>& ids) {
  std::string s;
  for (const int32_t id : ids) s.push_back(static_cast<char>(static_cast<uint8_t>(id)));
  return s;
}

}  // namespace kiln::models
