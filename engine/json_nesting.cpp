#include "engine/json_nesting.h"

namespace kiln {

std::optional<size_t> json_deeper_than(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t at = 0; at < text.size(); ++at) {
    const char c = text[at];
    if (escaped) {
      escaped = false;
    } else if (in_string) {
      escaped = c == '\\';
      in_string = c != '"';
    } else if (c == '"') {
      in_string = true;
    } else if ((c == '{' || c == '[') && ++depth > max_depth) {
      return at + 1;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace kiln
