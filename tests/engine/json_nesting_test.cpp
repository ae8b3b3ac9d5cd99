// JSON text from outside is scanned for its nesting before it is parsed
// (engine/json_nesting.h): brackets count outside strings only.
#include "engine/json_nesting.h"

#include <doctest/doctest.h>

#include <string>

using kiln::json_deeper_than;

TEST_CASE("json_deeper_than finds the byte that opens a level too deep, outside strings") {
  CHECK_FALSE(json_deeper_than("", 0));
  CHECK_FALSE(json_deeper_than("7", 0));
  CHECK(json_deeper_than("[]", 0) == 1u);
  CHECK_FALSE(json_deeper_than(R"({"a":[1,[2]],"b":{}})", 3));
  CHECK(json_deeper_than(R"({"a":[1,[2]],"b":{}})", 2) == 9u);
  CHECK(json_deeper_than(R"({"a":{},"b":{"c":[]}})", 2) == 18u);  // depth returns after each close
  // Brackets in strings, escaped quotes and backslashes among them, are text.
  CHECK_FALSE(json_deeper_than(R"({"[[[":"{{{\"[[[","\\":"[["})", 1));
  CHECK(json_deeper_than(R"({"\\":[]})", 1) == 7u);
  // 20 MB of unclosed brackets: found at once, whatever follows.
  CHECK(json_deeper_than("{\"x\":" + std::string(20'000'000, '['), 3) == 8u);
}
