#include <doctest/doctest.h>

#include <string>

#include "engine/ir/error.h"
#include "models/tasks/hash_split.h"

using namespace kiln;
using namespace kiln::models;

TEST_CASE("split: FNV-1a 64 matches the published test vectors") {
  CHECK(fnv1a_64("") == 0xcbf29ce484222325u);
  CHECK(fnv1a_64("a") == 0xaf63dc4c8601ec8cu);
  CHECK(fnv1a_64("foobar") == 0x85944171f73967e8u);
}

TEST_CASE("split: shares follow the permille options and keys never move") {
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 20000; ++i) {
    const std::string key = "Wort " + std::to_string(i);
    const Split split = split_of(key, 100, 50);
    CHECK(split_of(key, 100, 50) == split);
    ++counts[static_cast<int>(split)];
  }
  CHECK(counts[static_cast<int>(Split::dev)] > 1700);  // expected 2000
  CHECK(counts[static_cast<int>(Split::dev)] < 2300);
  CHECK(counts[static_cast<int>(Split::test)] > 800);  // expected 1000
  CHECK(counts[static_cast<int>(Split::test)] < 1200);
  CHECK(split_of("Wort 1", 0, 0) == Split::train);
  CHECK(split_of("Wort 1", 1000, 0) == Split::dev);
}

TEST_CASE("split: names parse and print") {
  for (Split s : {Split::train, Split::dev, Split::test}) CHECK(parse_split(split_name(s)) == s);
  CHECK_THROWS_WITH_AS(parse_split("valid"), "unknown split 'valid' (expected train, dev or test)", Error);
}
