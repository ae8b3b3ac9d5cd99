#pragma once
// Beam search with GNMT's length penalty lp(len) = ((5 + len) / 6)^alpha: a
// hypothesis scores sum(log p) / lp(len). Each sentence's live hypotheses are
// beam_size decoder rows (step_decoder.h), reordered after each step, within
// the sentence's own rows, to the hypotheses that stay live. Several sentences
// share one decoder batch; each is searched exactly as it would be alone.
#include <cstdint>
#include <vector>

#include "models/decode/greedy.h"
#include "models/decode/step_decoder.h"

namespace kiln::models {

struct BeamOptions {
  int beam_size = 4;
  double length_penalty = 0.6;  // alpha; 0 ranks by the plain sum of log-probs
};

struct Hypothesis {
  std::vector<int32_t> tokens;  // without bos; ends with eos if it finished that way
  double log_prob = 0.0;        // sum of the tokens' log-probs
  double score = 0.0;           // log_prob / lp(tokens.size())
};

// lp(len) for alpha.
double length_penalty(int64_t len, double alpha);

// src i32[B,S]: B sentences, sentence b on decoder rows b * beam_size to
// (b + 1) * beam_size - 1, producing at most max_lens[b] tokens (0: nothing, a
// filler row). Each step extends every live hypothesis of a sentence by its
// beam_size most likely tokens; among the sentence's beam_size most likely
// candidates, those ending in eos (or reaching its max_len tokens) are finished
// and kept, and the beam_size most likely others stay live. A sentence stops
// once its beam_size best finished hypotheses cannot be beaten (a live one
// scores at most log_prob / lp(max_len)); its rows then idle (fed bos, results
// unread) until every sentence has stopped. Returns each sentence's up to
// beam_size finished hypotheses, best score first. Ties are broken by the token
// sequences (lexicographically smaller first), so results are deterministic.
std::vector<std::vector<Hypothesis>> beam_search_batch(StepDecoder& decoder, const Tensor& src,
                                                       const std::vector<int64_t>& max_lens, const DecodeTokens& tokens,
                                                       const BeamOptions& opts);

// One sentence: src i32[1,S].
std::vector<Hypothesis> beam_search(StepDecoder& decoder, const Tensor& src, int64_t max_len,
                                    const DecodeTokens& tokens, const BeamOptions& opts);

}  // namespace kiln::models
