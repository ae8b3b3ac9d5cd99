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

// A hypothesis one token longer than the live one on the sentence's row `row`.
struct Candidate {
  Hypothesis hyp;
  int32_t row;
};

// The `k` most likely tokens of one row of log-probs that the decoder may
// produce (ties: lower id first), in one pass over the row: a token enters the
// k best kept so far only if it beats the last of them.
std::vector<int32_t> top_tokens(const float* row, int64_t vocab, int64_t k, const std::vector<char>& allowed) {
  const auto better = [row](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; };
  std::vector<int32_t> best;  // best first
  if (k < 1) return best;
  for (int32_t id = 0; id < static_cast<int32_t>(vocab); ++id) {
    if (!allowed[static_cast<size_t>(id)]) continue;
    if (static_cast<int64_t>(best.size()) == k && !better(id, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), id, better), id);
    if (static_cast<int64_t>(best.size()) > k) best.pop_back();
  }
  return best;
}

// One sentence's search over its k decoder rows: row r extends live[r]; rows
// past live.size() are fillers (results not read).
class SentenceBeam {
 public:
  SentenceBeam(int64_t max_len, const DecodeTokens& tokens, const BeamOptions& opts)
      : max_len_(max_len), k_(opts.beam_size), alpha_(opts.length_penalty), tokens_(tokens) {
    if (max_len > 0) live_.emplace_back();
  }

  bool done() const { return live_.empty(); }

  // Extends the live hypotheses by their rows' log-probs (the sentence's k rows
  // of f32[rows, vocab] from `log_probs`); returns, for each of the k rows, the
  // row (of the k) it continues from.
  std::vector<int32_t> advance(const float* log_probs, int64_t vocab) {
    if (allowed_.empty()) allowed_ = tokens_.allowed(vocab);
    std::vector<Candidate> candidates;
    for (size_t r = 0; r < live_.size(); ++r) {
      const float* row = log_probs + static_cast<int64_t>(r) * vocab;
      for (int32_t id : top_tokens(row, vocab, k_, allowed_)) {
        Candidate c{live_[r], static_cast<int32_t>(r)};
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
    live_.clear();
    std::vector<int32_t> parents(static_cast<size_t>(k_), 0);
    for (size_t i = 0; i < candidates.size(); ++i) {
      Hypothesis& h = candidates[i].hyp;
      const bool ends = h.tokens.back() == tokens_.eos || static_cast<int64_t>(h.tokens.size()) >= max_len_;
      if (ends) {
        if (static_cast<int64_t>(i) < k_) {
          h.score = h.log_prob / length_penalty(static_cast<int64_t>(h.tokens.size()), alpha_);
          finished_.push_back(std::move(h));
        }
      } else if (static_cast<int64_t>(live_.size()) < k_) {
        parents[live_.size()] = candidates[i].row;
        live_.push_back(std::move(h));
      }
    }
    // Done when the k best finished hypotheses cannot be beaten: a live one's
    // score can at most reach log_prob / lp(max_len), since log-probs only
    // fall.
    std::sort(finished_.begin(), finished_.end(), better_score);
    if (static_cast<int64_t>(finished_.size()) >= k_ && !live_.empty()) {
      const double bound = live_.front().log_prob / length_penalty(max_len_, alpha_);
      if (finished_[static_cast<size_t>(k_ - 1)].score >= bound) live_.clear();
    }
    return parents;
  }

  // The token row r feeds next.
  int32_t next_token(size_t r) const { return r < live_.size() ? live_[r].tokens.back() : tokens_.bos; }

  // The k best finished hypotheses, best first.
  std::vector<Hypothesis> take_finished() {
    if (finished_.size() > static_cast<size_t>(k_)) finished_.resize(static_cast<size_t>(k_));
    return std::move(finished_);
  }

 private:
  int64_t max_len_, k_;
  double alpha_;
  const DecodeTokens& tokens_;
  std::vector<char> allowed_;  // tokens_.allowed(vocab), made at the first step
  std::vector<Hypothesis> live_, finished_;
};

}  // namespace

double length_penalty(int64_t len, double alpha) { return std::pow((5.0 + static_cast<double>(len)) / 6.0, alpha); }

std::vector<std::vector<Hypothesis>> beam_search_batch(StepDecoder& decoder, const Tensor& src,
                                                       const std::vector<int64_t>& max_lens, const DecodeTokens& tokens,
                                                       const BeamOptions& opts) {
  if (opts.beam_size < 1) throw Error("beam search: --beam must be at least 1, got " + std::to_string(opts.beam_size));
  const auto sentences = static_cast<size_t>(src.shape().at(0));
  if (max_lens.size() != sentences)
    throw Error("beam search: " + std::to_string(max_lens.size()) + " length limits for " + std::to_string(sentences) +
                " sentences");
  const auto k = static_cast<size_t>(opts.beam_size);
  std::vector<SentenceBeam> beams;
  for (int64_t max_len : max_lens) beams.emplace_back(max_len, tokens, opts);
  const auto searching = [&] { return std::any_of(beams.begin(), beams.end(), [](auto& b) { return !b.done(); }); };
  if (searching()) {
    decoder.start(src, opts.beam_size, *std::max_element(max_lens.begin(), max_lens.end()));
    std::vector<int32_t> fed(sentences * k, tokens.bos), parents(sentences * k);
    while (true) {
      const Tensor& lp = decoder.step(fed);
      const int64_t vocab = lp.shape().at(1);
      for (size_t b = 0; b < sentences; ++b) {
        const size_t first = b * k;
        // A stopped sentence's rows keep their place (and stay unread).
        std::vector<int32_t> within(k);
        for (size_t r = 0; r < k; ++r) within[r] = static_cast<int32_t>(r);
        if (!beams[b].done()) within = beams[b].advance(lp.f32().data() + static_cast<int64_t>(first) * vocab, vocab);
        for (size_t r = 0; r < k; ++r) parents[first + r] = static_cast<int32_t>(first) + within[r];
      }
      if (!searching()) break;
      decoder.reorder(parents);
      for (size_t b = 0; b < sentences; ++b)
        for (size_t r = 0; r < k; ++r) fed[b * k + r] = beams[b].next_token(r);
    }
  }
  std::vector<std::vector<Hypothesis>> out;
  for (SentenceBeam& b : beams) out.push_back(b.take_finished());
  return out;
}

std::vector<Hypothesis> beam_search(StepDecoder& decoder, const Tensor& src, int64_t max_len,
                                    const DecodeTokens& tokens, const BeamOptions& opts) {
  if (src.shape().at(0) != 1)
    throw Error("beam search decodes one sentence at a time, got a batch of " + std::to_string(src.shape().at(0)));
  return beam_search_batch(decoder, src, {max_len}, tokens, opts).front();
}

}  // namespace kiln::models
