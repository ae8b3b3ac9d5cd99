#include "models/tasks/parallel_text.h"

#include <algorithm>
#include <filesystem>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/eval/utf8.h"

namespace kiln::models {
namespace {

// A side of a corpus file may be large; past this it is not a corpus for one machine.
constexpr size_t kMaxCorpusFileBytes = size_t{16} << 30;

std::string read_corpus_file(const std::string& path) { return read_file(path, kMaxCorpusFileBytes, "a corpus file"); }

// The file's lines without their '\n' (and a '\r' before it) and without a
// byte-order mark at its start; a last line without '\n' counts, an empty file has none.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  text = without_bom(text);
  while (!text.empty()) {
    const size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
  }
  return lines;
}

int64_t words(std::string_view s) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) n += s[i] != ' ' && (i == 0 || s[i - 1] == ' ');
  return n;
}

bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

// Adds the pair to `text` or counts why it is skipped.
void keep_or_skip(std::string_view src, std::string_view tgt, const CleaningLimits& limits, ParallelText& text) {
  ++text.lines;
  SkipCounts& skip = text.skipped;
  if (blank(src) || blank(tgt)) return void(++skip.empty);
  if (!not_text(src).empty() || !not_text(tgt).empty()) return void(++skip.not_text);
  if (static_cast<int64_t>(std::max(src.size(), tgt.size())) > limits.max_line_bytes) return void(++skip.too_long);
  std::string s = collapse_spaces(src), t = collapse_spaces(tgt);
  const auto ws = static_cast<double>(words(s)), wt = static_cast<double>(words(t));
  if (ws > limits.max_ratio * wt || wt > limits.max_ratio * ws) return void(++skip.ratio);
  text.source.push_back(std::move(s));
  text.target.push_back(std::move(t));
}

}  // namespace

std::string SkipCounts::str() const {
  std::string out;
  const auto add = [&](int64_t n, const char* what) {
    if (n > 0) out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(empty, "empty");
  add(not_text, "not UTF-8 text");
  add(too_long, "too long");
  add(ratio, "length ratio");
  return out.empty() ? "none" : out;
}

ParallelFiles parallel_files(const std::string& flag, const std::string& prefix, const std::string& src_lang,
                             const std::string& tgt_lang) {
  const auto must_exist = [&](const std::string& path) {
    if (!std::filesystem::is_regular_file(path))
      throw Error(flag + " " + prefix + ": " + path + " does not exist or is not a file");
    return path;
  };
  if (prefix.ends_with(".tsv")) return {must_exist(prefix), "", ""};
  return {"", must_exist(prefix + "." + src_lang), must_exist(prefix + "." + tgt_lang)};
}

ParallelText read_parallel_text(const ParallelFiles& files, const CleaningLimits& limits) {
  ParallelText text;
  if (!files.tsv.empty()) {
    const std::string bytes = read_corpus_file(files.tsv);
    int64_t number = 0;
    for (std::string_view line : lines_of(bytes)) {
      ++number;
      const auto tabs = std::count(line.begin(), line.end(), '\t');
      if (tabs != 1)
        throw Error(files.tsv + ":" + std::to_string(number) + ": expected source<TAB>target, found " +
                    std::to_string(tabs) + " tabs");
      const size_t tab = line.find('\t');
      keep_or_skip(line.substr(0, tab), line.substr(tab + 1), limits, text);
    }
    return text;
  }
  const std::string src_bytes = read_corpus_file(files.source), tgt_bytes = read_corpus_file(files.target);
  const std::vector<std::string_view> src = lines_of(src_bytes), tgt = lines_of(tgt_bytes);
  if (src.size() != tgt.size())
    throw Error("the sides are not line-aligned: " + files.source + " has " + std::to_string(src.size()) +
                " lines, " + files.target + " has " + std::to_string(tgt.size()));
  text.source.reserve(src.size());
  text.target.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) keep_or_skip(src[i], tgt[i], limits, text);
  return text;
}

std::string not_text(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 && c != '\t' && c != '\r') return "control byte " + std::to_string(c) + " at byte " + std::to_string(i + 1);
  }
  if (const auto at = malformed_utf8_at(s)) return "malformed UTF-8 at byte " + std::to_string(*at + 1);
  return "";
}

std::string collapse_spaces(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const bool space = c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
    if (!space) {
      out.push_back(c);
    } else if (!out.empty() && out.back() != ' ') {
      out.push_back(' ');
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace kiln::models
