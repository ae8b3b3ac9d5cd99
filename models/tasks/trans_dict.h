#pragma once
// The German-English dictionary of Debian's trans-de-en package (Frank Richter's
// dict.tu-chemnitz.de list), read into plain text pairs.
//
// A line is "GERMAN :: ENGLISH"; '#' starts a comment line. On each side '|' separates
// aligned alternatives (headword, plural, example phrases...) and ';' separates synonyms
// within one alternative. Reading a line:
//   - the sides are split on '|'; a line whose sides have different part counts is
//     not aligned and yields nothing;
//   - markup is dropped from each part: {m} {f} {pl} {adj} {vt}..., [ugs.] [coll.] [Br.]...,
//     <alternative spellings> and (parenthesized glosses). Glosses are explanations in
//     the other language's spirit, not translations, and often appear on one side only;
//   - of the ';' synonyms, the first non-empty one on each side is kept (all synonym
//     pairs would multiply pairs that mostly do not align);
//   - whitespace is collapsed, spaces before , . ; : ! ? are removed;
//   - pairs with an empty side or a side longer than kMaxPairChars are dropped.
// Duplicate pairs are kept once, at their first occurrence.
#include <string>
#include <string_view>
#include <vector>

namespace kiln::models {

struct TextPair {
  std::string de, en;
  bool operator==(const TextPair&) const = default;
};

inline constexpr std::size_t kMaxPairChars = 300;

// The pairs of one line (none for comments, blank or misaligned lines).
std::vector<TextPair> parse_trans_line(std::string_view line);

// Whitespace runs collapsed to one space, trimmed, no space before , . ; : ! ?
std::string normalize_spaces(std::string_view text);

// Markup removed and whitespace normalized, as for one synonym.
std::string strip_markup(std::string_view text);

// Every distinct pair of the file, in file order. kiln::Error naming the path and
// the package trans-de-en if it cannot be read.
std::vector<TextPair> read_trans_dict(const std::string& path);

}  // namespace kiln::models
