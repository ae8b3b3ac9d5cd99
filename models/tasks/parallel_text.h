#pragma once
// A user's parallel text, read and cleaned as translation toolkits do (Moses'
// clean-corpus-n, fairseq-preprocess): one split is either two line-aligned files
// PREFIX.SRC and PREFIX.TGT (fairseq's and JoeyNMT's convention) or one TSV file,
// a pair per line as "source<TAB>target". Pairs that cannot be trained on are
// skipped and counted by reason; a file that cannot be a corpus is an error.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::models {

// Where one split's pairs come from: a TSV file, or two line-aligned files.
struct ParallelFiles {
  std::string tsv;               // set: one file, source TAB target
  std::string source, target;    // else: PREFIX.SRC, PREFIX.TGT
};

// PREFIX names a TSV file if it ends in ".tsv", else the files PREFIX.SRC_LANG and
// PREFIX.TGT_LANG. kiln::Error naming `flag` (e.g. "--train") and the path for a
// missing file.
ParallelFiles parallel_files(const std::string& flag, const std::string& prefix, const std::string& src_lang,
                             const std::string& tgt_lang);

struct CleaningLimits {
  int64_t max_line_bytes = 1024;  // a longer line (either side) is skipped
  double max_ratio = 9;           // a pair whose word counts differ by more than this factor is skipped
};

// Pairs skipped, by reason (a pair counts once, for the first reason in this order).
struct SkipCounts {
  int64_t empty = 0;     // a side is empty or blank
  int64_t not_text = 0;  // a side is not UTF-8 text (malformed UTF-8, a control byte)
  int64_t too_long = 0;  // a side is longer than max_line_bytes
  int64_t ratio = 0;     // word counts too far apart
  int64_t total() const { return empty + not_text + too_long + ratio; }
  std::string str() const;  // "3 empty, 1 not UTF-8 text, ..." (reasons with a count only), or "none"
};

struct ParallelText {
  std::vector<std::string> source, target;  // kept pairs, whitespace collapsed and trimmed
  int64_t lines = 0;                        // pairs read, kept or not
  SkipCounts skipped;
};

// Reads and cleans one split. kiln::Error naming the file (and line) for an
// unreadable file, two files with different line counts (naming both and their
// counts), a TSV line without exactly one tab, or a file past its size limit.
ParallelText read_parallel_text(const ParallelFiles& files, const CleaningLimits& limits);

// Why `s` is not a line of UTF-8 text ("" if it is): a NUL or another control
// byte, or a malformed UTF-8 sequence, at a 1-based byte column.
std::string not_text(std::string_view s);

// Whitespace runs collapsed to one space, trimmed.
std::string collapse_spaces(std::string_view s);

}  // namespace kiln::models
