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

// `text` without a UTF-8 byte-order mark (EF BB BF) at its start: some editors
// write one at the start of a file, and it is not text (as a '\r' before '\n'
// is not). Every reader of a user's text file drops it.
std::string_view without_bom(std::string_view text);

// The strict validator lives with the IR, whose strings must be UTF-8 too.
using kiln::malformed_utf8_at;

}  // namespace kiln::models
