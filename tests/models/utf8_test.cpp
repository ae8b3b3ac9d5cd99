// The UTF-8 helpers behind BLEU's tokenizer, chrF and kiln score's input check.
#include "models/eval/utf8.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace kiln::models;

TEST_CASE("characters splits UTF-8 into whole characters, stray bytes alone") {
  CHECK(characters("aä€😀") == std::vector<std::string_view>{"a", "ä", "€", "😀"});
  CHECK(characters("a\xff\xc3") == std::vector<std::string_view>{"a", "\xff", "\xc3"});
  CHECK(characters("").empty());
}

TEST_CASE("is_space is Python's str.isspace") {
  for (const char* space : {" ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\u0085", "\u00a0", "\u2003", "\u3000"})
    CHECK_MESSAGE(is_space(space), "U+", space);
  for (const char* other : {"a", "\u200b", "\ufeff", "\x85", "\xa0"}) CHECK_MESSAGE(!is_space(other), other);
}

TEST_CASE("malformed_utf8_at finds the first byte that is not well-formed UTF-8") {
  CHECK_FALSE(malformed_utf8_at("plain, Grüße, €, 😀, U+10FFFF \xf4\x8f\xbf\xbf").has_value());
  CHECK(malformed_utf8_at("ab\xff") == 2);            // never a lead byte
  CHECK(malformed_utf8_at("a\x80") == 1);             // a stray continuation byte
  CHECK(malformed_utf8_at("\xc3") == 0);              // truncated
  CHECK(malformed_utf8_at("\xe2\x82x") == 0);         // a continuation byte missing
  CHECK(malformed_utf8_at("\xc0\xaf") == 0);          // overlong '/'
  CHECK(malformed_utf8_at("\xe0\x80\xaf") == 0);      // overlong, three bytes
  CHECK(malformed_utf8_at("\xf0\x80\x80\xaf") == 0);  // overlong, four bytes
  CHECK(malformed_utf8_at("x\xed\xa0\x80") == 1);     // a surrogate (U+D800)
  CHECK(malformed_utf8_at("\xf4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK(malformed_utf8_at("\xf5\x80\x80\x80") == 0);
}
