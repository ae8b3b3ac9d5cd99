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
                                {"The dog bit the man.", "It was not unexpected."});
  CHECK(same.score == doctest::Approx(100.0));
  CHECK(same.brevity_penalty == 1.0);
  CHECK(same.hyp_len == 11);  // "The dog bit the man ." and "It was not unexpected ."
  for (double p : same.precisions) CHECK(p == doctest::Approx(100.0));

  const Bleu none = corpus_bleu({"a b c d"}, {"e f g h"});
  CHECK(none.score == 0.0);
  for (double p : none.precisions) CHECK(p == 0.0);  // sacreBLEU stops before smoothing
  CHECK(bleu_str(none) == "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)");
}

TEST_CASE("clipped n-gram precisions with exp smoothing by hand") {
  // hyp "the cat sat on the mat", ref "the cat is on the mat":
  //   1-grams the x2, cat, on, mat match: 5/6; 2-grams "the cat", "on the", "the mat": 3/5;
  //   3-gram "on the mat": 1/4; 4-grams 0/3, smoothed to 1 / (2 * 3) = 1/6.
  //   BLEU = (5/6 * 3/5 * 1/4 * 1/6)^(1/4) = (1/48)^(1/4) = 0.3799178...
  const Bleu b = corpus_bleu({"the cat sat on the mat"}, {"the cat is on the mat"});
  CHECK(b.score == doctest::Approx(100 * std::pow(1.0 / 48, 0.25)).epsilon(1e-12));
  CHECK(b.precisions[0] == doctest::Approx(500.0 / 6));
  CHECK(b.precisions[3] == doctest::Approx(100.0 / 6));
  CHECK(bleu_str(b) == "BLEU = 37.99 83.3/60.0/25.0/16.7 (BP = 1.000 ratio = 1.000 hyp_len = 6 ref_len = 6)");

  // Clipping: "the the the" against "the cat" counts "the" once: 1/3.
  CHECK(corpus_bleu({"the the the"}, {"the cat"}).precisions[0] == doctest::Approx(100.0 / 3));

  // Two zero orders: the second is smoothed with 1 / (4 * total).
  // hyp "a b x c" ref "a b c": 1-grams 3/4, 2-grams "a b" 1/3, 3-grams 0/2 -> 1/4, 4-grams 0/1 -> 1/4.
  const Bleu two = corpus_bleu({"a b x c"}, {"a b c"});
  CHECK(two.precisions[2] == doctest::Approx(25.0));
  CHECK(two.precisions[3] == doctest::Approx(25.0));
  CHECK(two.score == doctest::Approx(100 * std::pow(0.75 / 3 * 0.25 * 0.25, 0.25)));
}

TEST_CASE("the brevity penalty and short hypotheses") {
  // sacreBLEU's test_case_statistics: counts 4/6, 2/5, 1/4, 0/3 (4-grams smoothed to 1/6);
  // hyp_len 6 < ref_len 8: BP = exp(1 - 8/6) = 0.71653;
  // BLEU = 0.71653 * (4/6 * 2/5 * 1/4 * 1/6)^(1/4) = 0.71653 * (1/90)^(1/4) = 23.263 %.
  const Bleu b = corpus_bleu({"am I am a character sequence"}, {"I am a symbol string sequence a a"});
  CHECK(b.brevity_penalty == doctest::Approx(std::exp(1 - 8.0 / 6)));
  CHECK(b.score == doctest::Approx(100 * std::exp(1 - 8.0 / 6) * std::pow(1.0 / 90, 0.25)));
  CHECK(bleu_str(b) == "BLEU = 23.26 66.7/40.0/25.0/16.7 (BP = 0.717 ratio = 0.750 hyp_len = 6 ref_len = 8)");

  // No 3-grams at all: sacreBLEU takes log 0 and scores 0, even with matches.
  const Bleu short_hyp = corpus_bleu({"the cat"}, {"the cat sat on the mat"});
  CHECK(short_hyp.score == 0.0);
  CHECK(bleu_str(short_hyp) == "BLEU = 0.00 100.0/100.0/0.0/0.0 (BP = 0.135 ratio = 0.333 hyp_len = 2 ref_len = 6)");

  // Empty hypotheses are kept (and empty corpora are allowed).
  CHECK(corpus_bleu({"", ""}, {"a b", "c"}).brevity_penalty == 0.0);
  CHECK(bleu_str(corpus_bleu({}, {})) ==
        "BLEU = 0.00 0.0/0.0/0.0/0.0 (BP = 1.000 ratio = 0.000 hyp_len = 0 ref_len = 0)");
}

TEST_CASE("corpus statistics are summed over sentences before the score") {
  // sacreBLEU's README example with its first reference set only (computed with
  // sacreBLEU's algorithm): 12/17, 6/14, 4/11, 3/8 -> 45.07.
  const std::vector<std::string> hyps = {"The dog bit the man.", "It wasn't surprising.",
                                         "The man had just bitten him."};
  const std::vector<std::string> refs = {"The dog bit the man.", "It was not unexpected.", "The man bit him first."};
  const Bleu b = corpus_bleu(hyps, refs);
  CHECK(b.score == doctest::Approx(45.06750632106114).epsilon(1e-12));
  CHECK(bleu_str(b) == "BLEU = 45.07 70.6/42.9/36.4/37.5 (BP = 1.000 ratio = 1.000 hyp_len = 17 ref_len = 17)");

  // Two sentences with punctuation and a brevity penalty, also from sacreBLEU's algorithm.
  const Bleu de = corpus_bleu({"I must cancel the appointment.", "That is good, right?"},
                              {"I have to cancel this appointment.", "That is good, isn't it?"});
  CHECK(de.score == doctest::Approx(28.30382234301584).epsilon(1e-12));
  CHECK(bleu_str(de) == "BLEU = 28.30 75.0/40.0/25.0/16.7 (BP = 0.846 ratio = 0.857 hyp_len = 12 ref_len = 14)");

  // Trailing whitespace is stripped first, so "-\n" at the end does not join anything.
  CHECK(corpus_bleu({"well done -\n"}, {"well done -"}).score == doctest::Approx(0.0));  // 3 tokens: no 4-grams
  CHECK(corpus_bleu({"a b c d -\n"}, {"a b c d -"}).score == doctest::Approx(100.0));
}

TEST_CASE("hypothesis and reference counts must agree") {
  check_error([] { corpus_bleu({"a", "b"}, {"a"}); }, {"2 hypotheses but 1 references"});
}
