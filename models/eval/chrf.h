#pragma once
// Corpus chrF as sacreBLEU computes it (Popović 2015; sacreBLEU's CHRF with
// char_order 6, word_order 0, whitespace left out of the character n-grams):
// per sentence and n-gram order 1..6, the hypothesis, reference and matched
// (clipped) character n-gram counts, summed over the corpus, then one F-beta
// score in 0..100. With several references, each sentence adds the counts of
// the reference whose sentence-level score is best (the first on a tie).
// Characters are Unicode code points (models/eval/utf8.h).
#include <cstddef>
#include <string>
#include <vector>

#include "models/eval/reference_streams.h"

namespace kiln::models {

// sacreBLEU's parameters; the defaults are its chrF2.
struct ChrfOptions {
  int beta = 2;  // recall weighs beta times as much as precision
  // false (sacreBLEU's default, 'eff:yes'): average precision and recall over the
  // orders that have both hypothesis and reference n-grams, then one F-beta of the
  // averages. true: the mean of each order's F-beta, an order without n-grams
  // counting as 1e-16 (chrF++.py, NLTK and Moses).
  bool eps_smoothing = false;
};

struct Chrf {
  double score = 0;  // 0..100
  ChrfOptions options;
};

// refs: one or more reference streams, each with one line per hypothesis
// (kiln::Error if not; reference_streams.h).
Chrf corpus_chrf(const std::vector<std::string>& hyps, const ReferenceStreams& refs, const ChrfOptions& opts = {});

// sacreBLEU's summary line: "chrF2 = 54.32".
std::string chrf_str(const Chrf& c);

// The settings corpus_chrf uses with `nrefs` reference streams, in sacreBLEU's
// signature format ("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:kiln").
std::string chrf_signature(size_t nrefs = 1, const ChrfOptions& opts = {});

}  // namespace kiln::models
