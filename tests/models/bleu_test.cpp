// sacreBLEU's corpus BLEU (13a tokenizer, exp smoothing). Expected values are worked
// out by hand in the comments; the last ones come from sacreBLEU's own algorithm
// (its tokenizer_13a.py regexes and BLEU.compute_bleu, transcribed into a few
// lines of Python) and are stated here as constants.
#include "models/eval/bleu.h"

#include <doctest/doctest.h>

#include <cmath>

#include "check_error.h"

using namespace kiln::models;

TEST_CASE("tokenize_13a splits like mteval-v13a") {
  // Symbols apart, but not the apostrophe, hyphen inside words, or . and , inside numbers.
  CHECK(tokenize_13a("Hello, world!") == "Hello , world !");
  CHECK(tokenize_13a("It costs $3.50, or 3,000 euros.") == "It costs $ 3.50 , or 3,000 euros .");
  CHECK(tokenize_13a("don't stop") == "don't stop");
  CHECK(tokenize_13a("1990-2000 and well-known") == "1990 - 2000 and well-known");
  CHECK(tokenize_13a("e.g. U.S.A. 1.5.") == "e . g . U . S . A . 1.5 .");
  CHECK(tokenize_13a("x...y") == "x . . . y");
  CHECK(tokenize_13a("a.,b") == "a . , b");
  CHECK(tokenize_13a("3,5.4,x") == "3,5.4 , x");
  CHECK(tokenize_13a("5.-") == "5 . -");
  CHECK(tokenize_13a("(a+b)*c=d/e [f] {g} ~h|i^j_k`l@m?n;o:p#q%r") ==
        "( a + b ) * c = d / e [ f ] { g } ~ h | i ^ j _ k ` l @ m ? n ; o : p # q % r");
  // SGML entities, <skipped>, line breaks.
  CHECK(tokenize_13a("&quot;Hi&quot; &amp; &lt;b&gt;") == "\" Hi \" & < b >");
  CHECK(tokenize_13a("a<skipped>b -\nc\nd") == "ab c d");
  // Non-ASCII letters are "not a digit" as whole characters; Unicode spaces split.
  CHECK(tokenize_13a("Grüße, Straße.") == "Grüße , Straße .");
  CHECK(tokenize_13a("Ende.\u00bb") == "Ende . \u00bb");
  CHECK(tokenize_13a("  a\tb  ") == "a b");
  CHECK(tokenize_13a("a\u00a0b\u3000c") == "a b c");
  CHECK(tokenize_13a("") == "");
  // Invalid UTF-8 bytes are kept as characters of their own.
  CHECK(tokenize_13a("a\xff.") == "a\xff .");
}

TEST_CASE("a perfect translation scores 100 and a disjoint one 0") {
  const Bleu same = corpus_bleu({"The dog bit the man.", "It was not unexpected."},
                                {{"The dog bit the man.", "It was not unexpected."}});
  CHECK(same.score == doctest::Approx(100.0));
  CHECK(same.brevity_penalty == 1.0);
  CHECK(same.hyp_len == 11);  // "The dog bit the man ." and "It was not unexpected ."
  for (double p : same.precisions) CHECK(p == doctest::Approx(100.0));

  const Bleu none = corpus_bleu({"a b c d"}, {{"e f g h"}});
  CHECK(none.score == 0.0);
  for (double p : none.precisions) CHECK(p == 0.0);  // sacreBLEU stops before smoothing
  CHECK(bleu_str(none) == "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)");
}

TEST_CASE("clipped n-gram precisions with exp smoothing by hand") {
  // hyp "the cat sat on the mat", ref "the cat is on the mat":
  //   1-grams the x2, cat, on, mat match: 5/6; 2-grams "the cat", "on the", "the mat": 3/5;
  //   3-gram "on the mat": 1/4; 4-grams 0/3, smoothed to 1 / (2 * 3) = 1/6.
  //   BLEU = (5/6 * 3/5 * 1/4 * 1/6)^(1/4) = (1/48)^(1/4) = 0.3799178...
  const Bleu b = corpus_bleu({"the cat sat on the mat"}, {{"the cat is on the mat"}});
  CHECK(b.score == doctest::Approx(100 * std::pow(1.0 / 48, 0.25)).epsilon(1e-12));
  CHECK(b.precisions[0] == doctest::Approx(500.0 / 6));
  CHECK(b.precisions[3] == doctest::Approx(100.0 / 6));
  CHECK(bleu_str(b) == "BLEU = 37.99 83.3/60.0/25.0/16.7 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)");

  // Clipping: "the the the" against "the cat" counts "the" once: 1/3.
  CHECK(corpus_bleu({"the the the"}, {{"the cat"}}).precisions[0] == doctest::Approx(100.0 / 3));

  // Two zero orders: the second is smoothed with 1 / (4 * total).
  // hyp "a b x c" ref "a b c": 1-grams 3/4, 2-grams "a b" 1/3, 3-grams 0/2 -> 1/4, 4-grams 0/1 -> 1/4.
  const Bleu two = corpus_bleu({"a b x c"}, {{"a b c"}});
  CHECK(two.precisions[2] == doctest::Approx(25.0));
  CHECK(two.precisions[3] == doctest::Approx(25.0));
  CHECK(two.score == doctest::Approx(100 * std::pow(0.75 / 3 * 0.25 * 0.25, 0.25)));
}

TEST_CASE("the brevity penalty and short hypotheses") {
  // sacreBLEU's test_case_statistics: counts 4/6, 2/5, 1/4, 0/3 (4-grams smoothed to 1/6);
  // hyp_len 6 < ref_len 8: BP = exp(1 - 8/6) = 0.71653;
  // BLEU = 0.71653 * (4/6 * 2/5 * 1/4 * 1/6)^(1/4) = 0.71653 * (1/90)^(1/4) = 23.263 %.
  const Bleu b = corpus_bleu({"am I am a character sequence"}, {{"I am a symbol string sequence a a"}});
  CHECK(b.brevity_penalty == doctest::Approx(std::exp(1 - 8.0 / 6)));
  CHECK(b.score == doctest::Approx(100 * std::exp(1 - 8.0 / 6) * std::pow(1.0 / 90, 0.25)));
  CHECK(bleu_str(b) == "BLEU = 23.26 66.7/40.0/25.0/16.7 (BP = 0.717 ratio = 0.750 hyp_len = 6 ref_len = 8)");

  // No 3-grams at all: sacreBLEU takes log 0 and scores 0, even with matches.
  const Bleu short_hyp = corpus_bleu({"the cat"}, {{"the cat sat on the mat"}});
  CHECK(short_hyp.score == 0.0);
  CHECK(bleu_str(short_hyp) == "BLEU = 0.00 100.0/100.0/0.0/0.0 (BP = 0.135 ratio = 0.333 hyp_len = 2 ref_len = 6)");

  // Empty hypotheses are kept (and empty corpora are allowed).
  CHECK(corpus_bleu({"", ""}, {{"a b", "c"}}).brevity_penalty == 0.0);
  CHECK(bleu_str(corpus_bleu({}, {{}})) ==
        "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 0.000 hyp_len = 0 ref_len = 0)");
}

TEST_CASE("corpus statistics are summed over sentences before the score") {
  // sacreBLEU's README example with its first reference set only (computed with
  // sacreBLEU's algorithm): 12/17, 6/14, 4/11, 3/8 -> 45.07.
  const std::vector<std::string> hyps = {"The dog bit the man.", "It wasn't surprising.",
                                         "The man had just bitten him."};
  const std::vector<std::string> refs = {"The dog bit the man.", "It was not unexpected.", "The man bit him first."};
  const Bleu b = corpus_bleu(hyps, {refs});
  CHECK(b.score == doctest::Approx(45.06750632106114).epsilon(1e-12));
  CHECK(bleu_str(b) == "BLEU = 45.07 70.6/42.9/36.4/37.5 (BP = 1.000 ratio = 1.000 hyp_len = 17 ref_len = 17)");

  // Two sentences with punctuation and a brevity penalty, also from sacreBLEU's algorithm.
  const Bleu de = corpus_bleu({"I must cancel the appointment.", "That is good, right?"},
                              {{"I have to cancel this appointment.", "That is good, isn't it?"}});
  CHECK(de.score == doctest::Approx(28.30382234301584).epsilon(1e-12));
  CHECK(bleu_str(de) == "BLEU = 28.30 75.0/40.0/25.0/16.7 (BP = 0.846 ratio = 0.857 hyp_len = 12 ref_len = 14)");

  // Trailing whitespace is stripped first, so "-\n" at the end does not join anything.
  CHECK(corpus_bleu({"well done -\n"}, {{"well done -"}}).score == doctest::Approx(0.0));  // 3 tokens: no 4-grams
  CHECK(corpus_bleu({"a b c d -\n"}, {{"a b c d -"}}).score == doctest::Approx(100.0));
}

TEST_CASE("hypothesis and reference counts must agree") {
  check_error([] { corpus_bleu({"a", "b"}, {{"a"}}); }, {"BLEU: 2 hypotheses but 1 references"});
  check_error([] { corpus_bleu({"a"}, {{"a"}, {"a", "b"}}); }, {"1 hypotheses but 2 references in reference stream 2"});
  check_error([] { corpus_bleu({"a"}, {}); }, {"BLEU: no reference streams"});
}

// sacreBLEU's own test cases (test_bleu.py, test_sentence_bleu.py and the
// examples of its README) with their published scores.
namespace {

const std::vector<std::string> kReadmeHyps = {"The dog bit the man.", "It wasn't surprising.",
                                              "The man had just bitten him."};
const ReferenceStreams kReadmeRefs = {
    {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
    {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."},
};

}  // namespace

TEST_CASE("two reference streams: sacreBLEU's own test cases") {
  // test_corpus_bleu (default settings, also with tokenize 13a and smooth none): 48.530827.
  const Bleu b = corpus_bleu(kReadmeHyps, kReadmeRefs);
  CHECK(std::abs(b.score - 48.530827) < 1e-6);
  // The README's line and signature. The closest reference lengths are 6 (of 6 and 7
  // for a 6-token hypothesis), 5 (of 5 and 5 for 4) and 7 (of 6 and 7 for 7): 18.
  CHECK(bleu_str(b) == "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
  CHECK(bleu_signature(kReadmeRefs.size()) == "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp|version:kiln");

  // The README's variable-reference example: the first sentence's first reference
  // is the empty string, which sacreBLEU keeps as a reference of length 0.
  ReferenceStreams holes = kReadmeRefs;
  holes[0][0] = "";
  CHECK(bleu_str(corpus_bleu(kReadmeHyps, holes)) ==
        "BLEU = 29.44 82.4/42.9/27.3/12.5 (BP = 0.889 ratio = 0.895 hyp_len = 17 ref_len = 19)");

  // test_corpus_bleu: empty hypotheses are kept, and score 0.
  const Bleu empty = corpus_bleu({"", "", ""}, kReadmeRefs);
  CHECK(empty.score == 0.0);
  CHECK(empty.hyp_len == 0);
}

TEST_CASE("one reference stream: sacreBLEU's own test cases") {
  // test_raw_bleu: no match at all scores 0 (#141), a perfect match 100.
  CHECK(corpus_bleu({"this is a test", "another test"}, {{"ref1", "ref2"}}).score == 0.0);
  CHECK(corpus_bleu({"this is a test"}, {{"this is a test"}}).score == doctest::Approx(100.0));
  // test_statistics: counts 4/2/1/0 of totals 6/5/4/3 (the brevity test above scores it).
  const Bleu stats = corpus_bleu({"am I am a character sequence"}, {{"I am a symbol string sequence a a"}});
  CHECK(stats.precisions[0] == doctest::Approx(100.0 * 4 / 6));
  CHECK(stats.precisions[1] == doctest::Approx(100.0 * 2 / 5));
  CHECK(stats.precisions[2] == doctest::Approx(100.0 * 1 / 4));
  // test_sentence_bleu (#98), exp smoothing and 13a: 8.493. It is computed with
  // effective order there, which changes nothing when every order has n-grams.
  const Bleu ro = corpus_bleu({"Producția de zahăr primă va fi exprimată în ceea ce privește zahărul alb;"},
                              {{"producţia de zahăr brut se exprimă în zahăr alb;"}});
  CHECK(std::abs(ro.score - 8.493) < 1e-3);
  // test_sentence_bleu (#141): no match scores 0.
  CHECK(corpus_bleu({"this is a cat"}, {{"okay thanks"}}).score == 0.0);
}

TEST_CASE("several references: clipping by the largest count and the closest length") {
  // "the" occurs twice in the hypothesis, once in each reference: clipped to 1, not 2.
  const Bleu clip = corpus_bleu({"the the cat"}, {{"the cat sat"}, {"a the dog"}});
  CHECK(clip.precisions[0] == doctest::Approx(100.0 * 2 / 3));
  // ...but a reference with it twice allows both.
  CHECK(corpus_bleu({"the the cat"}, {{"the cat sat"}, {"the the dog"}}).precisions[0] == doctest::Approx(100.0));
  // Lengths 2 and 4 are equally far from 3: the shorter counts.
  CHECK(corpus_bleu({"a b c"}, {{"a b c d"}, {"a b"}}).ref_len == 2);
  CHECK(corpus_bleu({"a b c"}, {{"a b"}, {"a b c d"}}).ref_len == 2);
  CHECK(corpus_bleu({"a b c"}, {{"x y z w v"}, {"a"}, {"a b c d"}}).ref_len == 4);
}
