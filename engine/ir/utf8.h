#pragma once
// Well-formed UTF-8 (Unicode's table 3-7): the .kir text's strings and every
// name and attribute string a graph holds are UTF-8, so any graph prints as
// text that Python (and any other reader) can decode.
#include <cstddef>
#include <optional>
#include <string_view>

namespace kiln {

// The length of the well-formed UTF-8 sequence starting at s[i] (1 for ASCII),
// or 0 if none starts there: a stray continuation byte, a truncated sequence, an
// overlong form, a surrogate or a code point above U+10FFFF.
size_t utf8_sequence_length(std::string_view s, size_t i);

// The 0-based byte offset of the first malformed UTF-8 sequence in `s`, or
// nullopt if `s` is valid UTF-8.
std::optional<size_t> malformed_utf8_at(std::string_view s);

}  // namespace kiln
