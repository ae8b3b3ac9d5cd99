#pragma once
// Text as sacreBLEU sees it: Python str, a sequence of Unicode code points.
// BLEU's tokenizer and chrF's character n-grams both work on whole characters.
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace kiln::models {

// `s` split into its UTF-8 sequences, one string_view per character. A byte
// that starts no valid sequence counts as one character.
std::vector<std::string_view> characters(std::string_view s);

// Python's str.isspace() for one character of characters(): what str.split()
// and str.rstrip() treat as whitespace.
bool is_space(std::string_view c);

// The 0-based byte offset of the first malformed UTF-8 sequence in `s` (a stray
// continuation byte, a truncated sequence, an overlong form, a surrogate or a
// code point above U+10FFFF), or nullopt if `s` is valid UTF-8.
std::optional<size_t> malformed_utf8_at(std::string_view s);

}  // namespace kiln::models
