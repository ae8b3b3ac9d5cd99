#pragma once
// Tokens of the .kir text form. The lexer is lazy (one token per next()) and
// throws ParseError at the offending byte for anything it cannot tokenize.
#include <string>
#include <string_view>

#include "engine/ir/error.h"

namespace kiln {

enum class TokenKind {
  end,         // end of input
  word,        // graph, input, f32, matmul, true, inf, axes, ...
  value_name,  // %x (text holds the name without '%')
  graph_name,  // @mlp (text holds the name without '@')
  integer,     // -3 (text holds the literal)
  real,        // 0.5, 1e-30, -inf, nan (text holds the literal)
  string,      // "..." (text holds the unescaped contents)
  punct,       // one of ( ) { } [ ] , = :
};

struct Token {
  TokenKind kind = TokenKind::end;
  std::string text;
  int line = 1;
  int col = 1;

  bool is(TokenKind k, std::string_view t) const { return kind == k && text == t; }
  bool is_punct(char c) const { return kind == TokenKind::punct && text.size() == 1 && text[0] == c; }
  bool is_word(std::string_view t) const { return is(TokenKind::word, t); }
};

// How an error message names a token: "'%x'", "','", "end of file", "string \"ab\"".
std::string describe(const Token& t);

class Lexer {
 public:
  Lexer(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {}

  Token next();
  const std::string& file() const { return file_; }
  SourceLoc loc(int line, int col) const { return {file_, line, col}; }

 private:
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }
  void advance();
  void skip_space_and_comments();
  [[noreturn]] void fail(const std::string& msg) const;
  Token lex_name(TokenKind kind, char sigil);
  Token lex_number();
  Token lex_string();

  std::string_view text_;
  std::string file_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

}  // namespace kiln
