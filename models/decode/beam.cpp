#include "models/decode/beam.h"

#include <algorithm>
#include <cmath>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

// Higher log-prob first; equal ones by their tokens, so the order is total.
bool more_likely(const Hypothesis& a, const Hypothesis& b) {
  if (a.log_prob != b.log_prob) return a.log_prob > b.log_prob;
  return a.tokens < b.tokens;
}

bool better_score(const Hypothesis& a, const Hypothesis& b) {
  if (a.score != b.score) return a.score > b.score;
  return a.tokens < b.tokens;
}

// A hypothesis one token longer than the live one on decoder row `row`.
struct Candidate {
  Hypothesis hyp;
  int32_t row;
};

// The `k` most likely tokens of one row of log-probs that the decoder may
// produce (ties: lower id first).
std::vector<int32_t> top_tokens(const float* row, int64_t vocab, int64_t k, const DecodeTokens& tokens) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < static_cast<int32_t>(vocab); ++id)
    if (tokens.may_produce(id)) ids.push_back(id);
  const int64_t allowed = static_cast<int64_t>(ids.size());
  const auto count = static_cast<ptrdiff_t>(std::min(k, allowed));
  std::partial_sort(ids.begin(), ids.begin() + count, ids.end(),
                    [row](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
  ids.resize(static_cast<size_t>(count));
  return ids;
}

}  // namespace

double length_penalty(int64_t len, double alpha) { return std::pow((5.0 + static_cast<double>(len)) / 6.0, alpha); }

std::vector<Hypothesis> beam_search(StepDecoder& decoder, const Tensor& src, int64_t max_len,
                                    const DecodeTokens& tokens, const BeamOptions& opts) {
  if (opts.beam_size < 1) throw Error("beam search: --beam must be at least 1, got " + std::to_string(opts.beam_size));
  if (src.shape().at(0) != 1)
    throw Error("beam search decodes one sentence at a time, got a batch of " + std::to_string(src.shape().at(0)));
  if (max_len <= 0) return {};
  const int64_t k = opts.beam_size;
  const auto score_of = [&](const Hypothesis& h) {
    return h.log_prob / length_penalty(static_cast<int64_t>(h.tokens.size()), opts.length_penalty);
  };

  // The k live hypotheses are k decoder rows over the same source: row r
  // extends live[r]; rows past live.size() are fillers (results not read).
  decoder.start(src, k, max_len);
  std::vector<int32_t> fed(static_cast<size_t>(k), tokens.bos);
  std::vector<Hypothesis> live{Hypothesis{}}, finished;
  for (int64_t t = 0; t < max_len && !live.empty(); ++t) {
    const Tensor& lp = decoder.step(fed);
    const int64_t vocab = lp.shape().at(1);

    std::vector<Candidate> candidates;
    for (size_t r = 0; r < live.size(); ++r) {
      const float* row = lp.f32().data() + static_cast<int64_t>(r) * vocab;
      for (int32_t id : top_tokens(row, vocab, k, tokens)) {
        Candidate c{live[r], static_cast<int32_t>(r)};
        c.hyp.tokens.push_back(id);
        c.hyp.log_prob += row[id];
        candidates.push_back(std::move(c));
      }
    }
    std::sort(candidates.begin(), candidates.end(),
              [](const Candidate& a, const Candidate& b) { return more_likely(a.hyp, b.hyp); });
    // Among the k best candidates, those ending in eos (or at the length limit)
    // finish; the k best others stay live, each on its own row, continuing
    // from its parent's row.
    live.clear();
    std::vector<int32_t> parents(static_cast<size_t>(k), 0);
    for (size_t i = 0; i < candidates.size(); ++i) {
      Hypothesis& h = candidates[i].hyp;
      const bool ends = h.tokens.back() == tokens.eos || static_cast<int64_t>(h.tokens.size()) >= max_len;
      if (ends) {
        if (static_cast<int64_t>(i) < k) {
          h.score = score_of(h);
          finished.push_back(std::move(h));
        }
      } else if (static_cast<int64_t>(live.size()) < k) {
        parents[live.size()] = candidates[i].row;
        live.push_back(std::move(h));
      }
    }
    // Done when the k best finished hypotheses cannot be beaten: a live one's
    // score can at most reach log_prob / lp(max_len), since log-probs only
    // fall.
    std::sort(finished.begin(), finished.end(), better_score);
    if (static_cast<int64_t>(finished.size()) >= k && !live.empty()) {
      const double bound = live.front().log_prob / length_penalty(max_len, opts.length_penalty);
      if (finished[static_cast<size_t>(k - 1)].score >= bound) live.clear();
    }
    if (live.empty()) break;
    decoder.reorder(parents);
    for (size_t r = 0; r < fed.size(); ++r) fed[r] = r < live.size() ? live[r].tokens.back() : tokens.bos;
  }
  if (finished.size() > static_cast<size_t>(k)) finished.resize(static_cast<size_t>(k));
  return finished;
}

}  // namespace kiln::models
