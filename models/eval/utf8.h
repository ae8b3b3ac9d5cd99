#pragma once
// Text as sacreBLEU sees it: Python str, a sequence of Unicode code points.
// BLEU's tokenizer and chrF's character n-grams both work on whole characters.
#include <string_view>
#include <vector>

#include "engine/ir/utf8.h"

namespace kiln::models {

// `s` split into its UTF-8 sequences, one string_view per character. A byte
// that starts no valid sequence counts as one character.
std::vector<std::string_view> characters(std::string_view s);

// Python's str.isspace() for one character of characters(): what str.split()
// and str.rstrip() treat as whitespace.
bool is_space(std::string_view c);

// The strict validator lives with the IR, whose strings must be UTF-8 too.
using kiln::malformed_utf8_at;

}  // namespace kiln::models
