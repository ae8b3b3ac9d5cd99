#include "models/tasks/trans_dict.h"

#include <fstream>
#include <unordered_set>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

char closing_bracket(char open) {
  switch (open) {
    case '{':
      return '}';
    case '[':
      return ']';
    case '(':
      return ')';
    case '<':
      return '>';
    default:
      return 0;
  }
}

// The position just past the bracket closing the one at `open` (nesting of the same
// kind counted), or npos if it is never closed.
std::size_t past_closing(std::string_view text, std::size_t open) {
  const char o = text[open], c = closing_bracket(o);
  int depth = 0;
  for (std::size_t i = open; i < text.size(); ++i) {
    if (text[i] == o) ++depth;
    if (text[i] == c && --depth == 0) return i + 1;
  }
  return std::string_view::npos;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_trailing_punct(char c) { return c == ',' || c == '.' || c == ';' || c == ':' || c == '!' || c == '?'; }

}  // namespace

std::string normalize_spaces(std::string_view text) {
  std::string out;
  bool pending_space = false;
  for (char ch : text) {
    if (is_space(ch)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space && !is_trailing_punct(ch)) out += ' ';
    pending_space = false;
    out += ch;
  }
  return out;
}

namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == sep) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

// The first synonym of one alternative that is not empty once its markup is gone.
std::string first_synonym(std::string_view alternative) {
  const std::string text = strip_markup(alternative);
  for (std::string_view synonym : split(text, ';')) {
    std::string s = normalize_spaces(synonym);
    if (!s.empty()) return s;
  }
  return {};
}

}  // namespace

std::string strip_markup(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (closing_bracket(text[i])) {
      const std::size_t end = past_closing(text, i);
      if (end != std::string_view::npos) {
        out += ' ';  // "Aal{m}x" must not glue its neighbours together
        i = end;
        continue;
      }
    }
    out += text[i++];
  }
  return normalize_spaces(out);
}

std::vector<TextPair> parse_trans_line(std::string_view line) {
  if (line.empty() || line[0] == '#') return {};
  const std::size_t sep = line.find("::");
  if (sep == std::string_view::npos || line.find("::", sep + 2) != std::string_view::npos) return {};
  const auto de_parts = split(line.substr(0, sep), '|');
  const auto en_parts = split(line.substr(sep + 2), '|');
  if (de_parts.size() != en_parts.size()) return {};
  std::vector<TextPair> pairs;
  for (std::size_t i = 0; i < de_parts.size(); ++i) {
    TextPair pair{first_synonym(de_parts[i]), first_synonym(en_parts[i])};
    if (pair.de.empty() || pair.en.empty() || pair.de.size() > kMaxPairChars || pair.en.size() > kMaxPairChars)
      continue;
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

std::vector<TextPair> read_trans_dict(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot read " + path + ": install Debian's trans-de-en package");
  std::vector<TextPair> pairs;
  std::unordered_set<std::string> seen;  // "de\0en"
  std::string line;
  while (std::getline(in, line)) {
    for (TextPair& pair : parse_trans_line(line)) {
      if (seen.insert(pair.de + '\0' + pair.en).second) pairs.push_back(std::move(pair));
    }
  }
  if (in.bad()) throw Error("error reading " + path);
  if (pairs.empty()) throw Error(path + " holds no dictionary entries (expected lines \"GERMAN :: ENGLISH\")");
  return pairs;
}

}  // namespace kiln::models
