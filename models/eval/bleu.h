#pragma once
// Corpus BLEU as sacreBLEU computes it by default: the 13a tokenizer
// (mteval-v13a), 4-gram precisions with clipped counts summed over the corpus,
// brevity penalty exp(1 - r/c) when c < r, and 'exp' smoothing (the k-th zero
// precision counts as 1 / (2^k * total)), score in 0..100. With several
// references, a hypothesis n-gram's count is clipped by its largest count in
// any one reference, and r is the sum of each sentence's reference length
// closest to the hypothesis's (the shorter on a tie).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/eval/reference_streams.h"

namespace kiln::models {

// sacreBLEU's default tokenizer (tokenizer_13a.py): unescapes a few SGML
// entities, separates punctuation and symbols, splits periods and commas not
// inside numbers, and dashes preceded by a digit; collapses whitespace.
std::string tokenize_13a(const std::string& line);

struct Bleu {
  double score = 0;           // 0..100
  double precisions[4] = {};  // n-gram precisions in percent, smoothed (what sacreBLEU prints)
  double brevity_penalty = 0;
  double ratio = 0;  // hyp_len / ref_len, 0 if ref_len is 0 (as sacreBLEU)
  int64_t hyp_len = 0, ref_len = 0;
};

// refs: one or more reference streams, each with one line per hypothesis
// (kiln::Error if not; reference_streams.h); all text tokenized with 13a.
Bleu corpus_bleu(const std::vector<std::string>& hyps, const ReferenceStreams& refs);

// sacreBLEU's summary line:
// "BLEU = 27.31 60.1/33.4/20.2/12.9 (BP = 0.972 ratio = 0.972 hyp_len = 9012
// ref_len = 9270)"
std::string bleu_str(const Bleu& b);

// The settings corpus_bleu uses with `nrefs` reference streams, in sacreBLEU's
// signature format (its defaults: mixed case, no effective order, 13a, exp
// smoothing), so a score can be compared with sacreBLEU's; the version field
// names kiln.
std::string bleu_signature(size_t nrefs = 1);

}  // namespace kiln::models
