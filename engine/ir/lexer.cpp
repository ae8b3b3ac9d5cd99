#include "engine/ir/lexer.h"

#include <cstdio>

#include "engine/ir/utf8.h"

namespace kiln {

static bool is_word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_word_char(char c) { return is_word_start(c) || is_digit(c); }
static bool is_name_char(char c) { return is_word_char(c) || c == '.'; }  // after % and @

static std::string char_str(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("character '") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", u);
  return buf;
}

std::string describe(const Token& t) {
  switch (t.kind) {
    case TokenKind::end:
      return "end of file";
    case TokenKind::value_name:
      return "'%" + t.text + "'";
    case TokenKind::graph_name:
      return "'@" + t.text + "'";
    case TokenKind::string: {
      std::string s = "string \"";
      if (t.text.size() <= 20) return s + t.text + "\"";
      size_t cut = 20;  // not inside a UTF-8 character
      while (cut > 0 && (static_cast<unsigned char>(t.text[cut]) & 0xc0) == 0x80) --cut;
      return s + t.text.substr(0, cut) + "...\"";
    }
    default:
      return "'" + t.text + "'";
  }
}

void Lexer::advance() {
  if (text_[pos_] == '\n') {
    ++line_;
    col_ = 1;
  } else {
    ++col_;
  }
  ++pos_;
}

void Lexer::fail(const std::string& msg) const { throw ParseError(loc(line_, col_), msg); }

void Lexer::skip_space_and_comments() {
  while (!at_end()) {
    const char c = peek();
    if (c == '#') {
      while (!at_end() && peek() != '\n') advance();
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance();
    } else {
      return;
    }
  }
}

Token Lexer::next() {
  skip_space_and_comments();
  Token t{TokenKind::end, {}, line_, col_};
  if (at_end()) return t;
  const char c = peek();
  if (c == '%') return lex_name(TokenKind::value_name, c);
  if (c == '@') return lex_name(TokenKind::graph_name, c);
  if (c == '"') return lex_string();
  if (is_digit(c) || c == '-') return lex_number();
  if (is_word_start(c)) {
    t.kind = TokenKind::word;
    while (!at_end() && is_word_char(peek())) {
      t.text += peek();
      advance();
    }
    return t;
  }
  if (std::string_view("(){}[],=:").find(c) != std::string_view::npos) {
    t.kind = TokenKind::punct;
    t.text = std::string(1, c);
    advance();
    return t;
  }
  fail("unexpected " + char_str(c));
}

Token Lexer::lex_name(TokenKind kind, char sigil) {
  Token t{kind, {}, line_, col_};
  advance();
  while (!at_end() && is_name_char(peek())) {
    t.text += peek();
    advance();
  }
  if (t.text.empty()) {
    std::string what = kind == TokenKind::value_name ? "a value name" : "a graph name";
    fail("expected " + what + " after '" + std::string(1, sigil) + "', got " +
         (at_end() ? std::string("end of file") : char_str(peek())));
  }
  return t;
}

// -?digits(.digits*)?([eE][+-]?digits)? or -inf. Conversion (and range checks)
// happen in the parser, which knows whether an int or a float is wanted.
Token Lexer::lex_number() {
  Token t{TokenKind::integer, {}, line_, col_};
  auto take = [&] {
    t.text += peek();
    advance();
  };
  if (peek() == '-') {
    if (peek(1) == 'i' && peek(2) == 'n' && peek(3) == 'f' && !is_name_char(peek(4))) {
      for (int i = 0; i < 4; ++i) take();
      t.kind = TokenKind::real;
      return t;
    }
    if (!is_digit(peek(1))) fail("unexpected character '-'");
    take();
  }
  while (is_digit(peek())) take();
  if (peek() == '.') {
    t.kind = TokenKind::real;
    take();
    while (is_digit(peek())) take();
  }
  if ((peek() == 'e' || peek() == 'E') &&
      (is_digit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && is_digit(peek(2))))) {
    t.kind = TokenKind::real;
    take();
    if (peek() == '+' || peek() == '-') take();
    while (is_digit(peek())) take();
  }
  if (is_name_char(peek())) {
    while (is_name_char(peek())) take();
    throw ParseError(loc(t.line, t.col), "malformed number '" + t.text + "'");
  }
  return t;
}

Token Lexer::lex_string() {
  Token t{TokenKind::string, {}, line_, col_};
  advance();
  for (;;) {
    if (at_end() || peek() == '\n') throw ParseError(loc(t.line, t.col), "unterminated string (missing closing '\"')");
    const char c = peek();
    if (c == '"') {
      advance();
      return t;
    }
    if (c == '\\') {
      const char e = peek(1);
      if (e == '"' || e == '\\') {
        t.text += e;
      } else if (e == 'n') {
        t.text += '\n';
      } else {
        fail("unknown escape sequence in string (expected \\\", \\\\ or \\n)");
      }
      advance();
      advance();
      continue;
    }
    // Strings hold UTF-8 text, so every graph prints as text (Python's str(g)).
    const size_t len = utf8_sequence_length(text_, pos_);
    if (len == 0) fail("string is not UTF-8: " + char_str(c) + " starts no UTF-8 character");
    for (size_t i = 0; i < len; ++i) {
      t.text += peek();
      advance();
    }
  }
}

}  // namespace kiln
