#include "models/decode/beam.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

// `rows` copies of row 0 of t (shape [1, ...]) stacked along axis 0.
template <class T>
xt::xarray<T> repeat_row(const xt::xarray<T>& a, int64_t rows) {
  std::vector<size_t> shape(a.shape().begin(), a.shape().end());
  const size_t row = a.size();
  shape[0] = static_cast<size_t>(rows);
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  for (int64_t r = 0; r < rows; ++r) std::copy(a.begin(), a.end(), out.begin() + r * static_cast<ptrdiff_t>(row));
  return out;
}

// The `k` most likely tokens of one row of log-probs (ties: lower id first).
std::vector<int32_t> top_tokens(const float* row, int64_t vocab, int64_t k) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  const auto count = static_cast<ptrdiff_t>(std::min(k, vocab));
  std::partial_sort(ids.begin(), ids.begin() + count, ids.end(),
                    [row](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
  ids.resize(static_cast<size_t>(count));
  return ids;
}

}  // namespace

double length_penalty(int64_t len, double alpha) { return std::pow((5.0 + static_cast<double>(len)) / 6.0, alpha); }

std::vector<Hypothesis> beam_search(Decoder& decoder, const Tensor& src, int64_t max_len, const DecodeTokens& tokens,
                                    const BeamOptions& opts) {
  if (opts.beam_size < 1) throw Error("beam search: --beam must be at least 1, got " + std::to_string(opts.beam_size));
  if (src.shape().at(0) != 1)
    throw Error("beam search decodes one sentence at a time, got a batch of " + std::to_string(src.shape().at(0)));
  const int64_t k = opts.beam_size;
  // The k live hypotheses run as one batch of k rows over the same source.
  const Tensor src_k(repeat_row(src.i32(), k));
  const Tensor memory_k(repeat_row(decoder.encode(src).f32(), k));
  const auto score_of = [&](const Hypothesis& h) {
    return h.log_prob / length_penalty(static_cast<int64_t>(h.tokens.size()), opts.length_penalty);
  };

  const int64_t len = decoder.padded_length(max_len);  // one decoder shape per call
  std::vector<Hypothesis> live{Hypothesis{}}, finished;
  for (int64_t t = 0; t < max_len && !live.empty(); ++t) {
    Tensor::I32 tgt_in = Tensor::I32::from_shape({static_cast<size_t>(k), static_cast<size_t>(len)});
    tgt_in.fill(decoder.config().pad_id);
    for (int64_t r = 0; r < k; ++r) {
      tgt_in(r, 0) = tokens.bos;
      if (r < static_cast<int64_t>(live.size()))
        for (size_t i = 0; i < live[r].tokens.size(); ++i) tgt_in(r, i + 1) = live[r].tokens[i];
    }
    const Tensor lp = decoder.log_probs(memory_k, src_k, Tensor(std::move(tgt_in)));
    const int64_t vocab = lp.shape().at(2);

    std::vector<Hypothesis> candidates;
    for (size_t r = 0; r < live.size(); ++r) {
      const float* row = lp.f32().data() + (static_cast<int64_t>(r) * len + t) * vocab;
      for (int32_t id : top_tokens(row, vocab, k)) {
        Hypothesis h = live[r];
        h.tokens.push_back(id);
        h.log_prob += row[id];
        candidates.push_back(std::move(h));
      }
    }
    std::sort(candidates.begin(), candidates.end(), more_likely);
    // Among the k best candidates, those ending in eos (or at the length limit)
    // finish; the k best others stay live.
    live.clear();
    for (size_t i = 0; i < candidates.size(); ++i) {
      Hypothesis& h = candidates[i];
      const bool ends = h.tokens.back() == tokens.eos || static_cast<int64_t>(h.tokens.size()) >= max_len;
      if (ends) {
        if (static_cast<int64_t>(i) < k) {
          h.score = score_of(h);
          finished.push_back(std::move(h));
        }
      } else if (static_cast<int64_t>(live.size()) < k) {
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
  }
  if (finished.size() > static_cast<size_t>(k)) finished.resize(static_cast<size_t>(k));
  return finished;
}

}  // namespace kiln::models
