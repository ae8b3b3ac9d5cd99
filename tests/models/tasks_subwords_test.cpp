#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/ir/error.h"
#include "models/tasks/subwords.h"

using namespace kiln;
using namespace kiln::models;
using doctest::Contains;

namespace {

// A few hundred short German and English phrases over a small word list.
std::vector<std::string> fixture_corpus() {
  const std::vector<std::string> de = {"das", "Haus", "ist", "groß", "klein", "der", "Baum", "grün", "Häuser", "Bäume"};
  const std::vector<std::string> en = {"the", "house", "is", "big", "small", "tree", "green", "houses", "trees", "a"};
  std::vector<std::string> texts;
  for (std::size_t i = 0; i < 300; ++i) {
    texts.push_back(de[i % 10] + " " + de[(i * 7 + 3) % 10] + " " + de[(i * 3 + 1) % 10] + ".");
    texts.push_back(en[i % 10] + " " + en[(i * 7 + 3) % 10] + " " + en[(i * 3 + 1) % 10] + ".");
  }
  return texts;
}

}  // namespace

TEST_CASE("subwords: a learned model round-trips its texts and keeps kiln's special ids") {
  const auto corpus = fixture_corpus();
  const Subwords subwords(Subwords::learn(corpus, 60), "fixture");
  CHECK(subwords.size() > 8);
  CHECK(subwords.size() <= 60);
  for (const std::string& text :
       {corpus[0], corpus[1], std::string("der grüne Baum ist klein."), std::string("the small trees are green.")}) {
    const auto ids = subwords.encode(text);
    REQUIRE(!ids.empty());
    for (int32_t id : ids) {
      CHECK(id > kSubwordEos);  // never pad, unk, bos or eos for covered characters
      CHECK(id < subwords.size());
    }
    CHECK(subwords.decode(ids) == text);
  }
  // Characters the model never saw become unk.
  const auto unknown = subwords.encode("Ω");
  CHECK(std::find(unknown.begin(), unknown.end(), kSubwordUnk) != unknown.end());
}

TEST_CASE("subwords: learning is deterministic") {
  const auto corpus = fixture_corpus();
  CHECK(Subwords::learn(corpus, 60) == Subwords::learn(corpus, 60));
}

TEST_CASE("subwords: bad models and settings are clear errors") {
  CHECK_THROWS_WITH_AS(Subwords("not a model", "ckpt/spm.model"), Contains("ckpt/spm.model: not a sentencepiece model"),
                       Error);
  CHECK_THROWS_WITH_AS(Subwords::learn(fixture_corpus(), 4), Contains("at least 8"), Error);
  CHECK_THROWS_WITH_AS(Subwords::learn({}, 60), Contains("no text"), Error);
}
