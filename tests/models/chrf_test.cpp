// sacreBLEU's chrF. The expected scores are sacreBLEU's own test cases
// (test_chrf.py and the example of its README), with the parameters each was
// published for: beta 3 with and without eps smoothing, beta 2 with eps
// smoothing (sentence level: a corpus of one sentence), and the default chrF2.
#include "models/eval/chrf.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "check_error.h"

using namespace kiln::models;

namespace {

struct Case {
  std::vector<std::string> hyps, refs;
  double expected;
};

void check_cases(const std::vector<Case>& cases, const ChrfOptions& opts) {
  for (const Case& c : cases) {
    const double score = corpus_chrf(c.hyps, {c.refs}, opts).score;
    CHECK_MESSAGE(std::abs(score - c.expected) < 1e-4, c.hyps.front(), ": ", score, " instead of ", c.expected);
  }
}

}  // namespace

TEST_CASE("chrF3 with eps smoothing: sacreBLEU's own test cases") {
  check_cases(
      {
          {{"abcdefg"}, {"hijklmnop"}, 0.0},
          {{"a"}, {"b"}, 0.0},
          {{""}, {"b"}, 0.0},
          {{""}, {"ref"}, 0.0},
          {{""}, {"reference"}, 0.0},
          {{"aa"}, {"ab"}, 8.3333},
          {{"a", "b"}, {"a", "c"}, 8.3333},
          {{"a"}, {"a"}, 16.6667},
          {{"a b c"}, {"a b c"}, 50.0},
          {{"a b c"}, {"abc"}, 50.0},
          {{" risk assessment must be made of those who are qualified and expertise in the sector - these are the "
            "scientists ."},
           {"risk assessment has to be undertaken by those who are qualified and expert in that area - that is the "
            "scientists ."},
           63.361730},
          {{" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "},
           {"Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."},
           64.1302698},
          {{"Niemand hat die Absicht, eine Mauer zu errichten"},
           {"Niemand hat die Absicht, eine Mauer zu errichten"},
           100.0},
      },
      {.beta = 3, .eps_smoothing = true});
}

TEST_CASE("chrF3 with effective order: sacreBLEU's own test cases") {
  check_cases(
      {
          {{"a"}, {"a"}, 100.0},
          {{""}, {"reference"}, 0.0},
          {{"a b c"}, {"a b c"}, 100.0},
          {{"a b c"}, {"abc"}, 100.0},
          {{""}, {"c"}, 0.0},
          {{"a", "b"}, {"a", "c"}, 50.0},
          {{"aa"}, {"ab"}, 25.0},
      },
      {.beta = 3, .eps_smoothing = false});
}

TEST_CASE("sentence-level chrF2 with eps smoothing: sacreBLEU's own test cases") {
  check_cases(
      {
          {{"Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře."},
           {"Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře."},
           39.14078509},
          {{"Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři."},
           {"A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři."},
           31.22557079},
          {{"Lapali po dechu, jejich životy skončily dřív, než skutečně začaly."},
           {"Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli."},
           57.15704367},
      },
      {.beta = 2, .eps_smoothing = true});
}

TEST_CASE("the default chrF2 with two references: sacreBLEU's README example") {
  const std::vector<std::string> hyps = {"The dog bit the man.", "It wasn't surprising.",
                                         "The man had just bitten him."};
  const ReferenceStreams refs = {
      {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
      {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."},
  };
  const Chrf c = corpus_chrf(hyps, refs);
  CHECK(chrf_str(c) == "chrF2 = 59.73");
  CHECK(chrf_signature(refs.size()) == "nrefs:2|case:mixed|eff:yes|nc:6|nw:0|space:no|version:kiln");
  CHECK(chrf_signature(1, {.beta = 3, .eps_smoothing = true}) ==
        "nrefs:1|case:mixed|eff:no|nc:6|nw:0|space:no|version:kiln");
  CHECK(chrf_str(corpus_chrf({"a"}, {{"a"}}, {.beta = 3})) == "chrF3 = 100.00");

  // Each sentence takes its best reference's counts, so a second reference never lowers the score.
  CHECK(c.score >= corpus_chrf(hyps, {refs[0]}).score);
  CHECK(c.score >= corpus_chrf(hyps, {refs[1]}).score);
  // The order of the streams does not matter.
  CHECK(corpus_chrf(hyps, {refs[1], refs[0]}).score == doctest::Approx(c.score));
}

TEST_CASE("chrF counts Unicode characters and ignores whitespace") {
  // "ä" is one character: "äb" against "äc" shares exactly one 1-gram of two, as "ab" against "ac".
  CHECK(corpus_chrf({"äb"}, {{"äc"}}).score == doctest::Approx(corpus_chrf({"ab"}, {{"ac"}}).score));
  // Any whitespace, Unicode spaces too, is left out before the n-grams.
  CHECK(corpus_chrf({"a\u00a0b\u3000c\t"}, {{"abc"}}).score == doctest::Approx(100.0));
  CHECK(corpus_chrf({}, {{}}).score == 0.0);
}

TEST_CASE("chrF: hypothesis and reference counts must agree") {
  check_error([] { corpus_chrf({"a", "b"}, {{"a"}}); }, {"chrF: 2 hypotheses but 1 references"});
  check_error([] { corpus_chrf({"a"}, {}); }, {"chrF: no reference streams"});
}
