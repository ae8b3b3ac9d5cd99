#include "models/decode/decode_all.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <numeric>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

// Sentences decoded together: `ids` (indices into the sources) on the first
// rows of a batch of `sentences` sources padded to `src_len`; the rows past
// ids.size() are fillers that generate nothing.
struct SentenceBatch {
  std::vector<size_t> ids;
  size_t sentences = 0;
  int64_t src_len = 0;
};

// The batches for `rows_per_sentence` decoder rows per sentence: sentences
// sorted by their padded source and output lengths (the decoder's shapes),
// then by length; each group of equal padded lengths cut into batches of the
// same power of two sentences that fit batch_tokens (fewer when the whole
// group is smaller: few sentences run as a smaller batch, not one padded with
// fillers).
std::vector<SentenceBatch> plan_batches(const Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                        const std::vector<int64_t>& max_lens, int64_t rows_per_sentence,
                                        int64_t batch_tokens) {
  const auto shape_of = [&](size_t i) {
    return std::pair(decoder.padded_length(static_cast<int64_t>(sources[i].size())),
                     decoder.padded_length(std::max<int64_t>(max_lens[i], 1)));
  };
  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::pair(shape_of(a), sources[a].size()) < std::pair(shape_of(b), sources[b].size());
  });
  std::vector<SentenceBatch> batches;
  for (size_t begin = 0; begin < order.size();) {
    const auto [src_len, out_len] = shape_of(order[begin]);
    size_t end = begin;
    while (end < order.size() && shape_of(order[end]) == shape_of(order[begin])) ++end;
    const int64_t fit = batch_tokens / (rows_per_sentence * (src_len + out_len));
    const size_t per_batch =
        std::min(std::bit_floor(static_cast<size_t>(std::max<int64_t>(fit, 1))), std::bit_ceil(end - begin));
    for (; begin < end; begin += std::min(per_batch, end - begin))
      batches.push_back({std::vector<size_t>(order.begin() + static_cast<ptrdiff_t>(begin),
                                             order.begin() + static_cast<ptrdiff_t>(std::min(begin + per_batch, end))),
                         per_batch, src_len});
  }
  return batches;
}

// The batch's sources as src i32[sentences, src_len] padded with pad_id;
// filler rows repeat the first source.
Tensor source_batch(const Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                    const SentenceBatch& batch) {
  const auto len = static_cast<size_t>(batch.src_len);
  Tensor::I32 src = Tensor::I32::from_shape({batch.sentences, len});
  src.fill(decoder.config().pad_id);
  for (size_t r = 0; r < batch.sentences; ++r) {
    const auto& s = sources[batch.ids[std::min(r, batch.ids.size() - 1)]];
    std::copy(s.begin(), s.end(), src.begin() + static_cast<ptrdiff_t>(r * len));
  }
  return Tensor(std::move(src));
}

// Runs `decode_batch` (src, each row's length limit) on every batch and
// returns its per-row results in the order of `sources`.
template <class Result>
std::vector<Result> decode_batches(
    const Decoder& decoder, const std::vector<std::vector<int32_t>>& sources, const std::vector<int64_t>& max_lens,
    int64_t rows_per_sentence, int64_t batch_tokens, const std::function<void(size_t)>& progress,
    const std::function<std::vector<Result>(const Tensor&, const std::vector<int64_t>&)>& decode_batch) {
  if (max_lens.size() != sources.size())
    throw Error("decode: " + std::to_string(max_lens.size()) + " length limits for " + std::to_string(sources.size()) +
                " sentences");
  for (size_t i = 0; i < sources.size(); ++i)
    if (sources[i].empty()) throw Error("decode: sentence " + std::to_string(i + 1) + " has no tokens");
  std::vector<Result> out(sources.size());
  for (const SentenceBatch& batch : plan_batches(decoder, sources, max_lens, rows_per_sentence, batch_tokens)) {
    std::vector<int64_t> limits(batch.sentences, 0);  // fillers generate nothing
    for (size_t r = 0; r < batch.ids.size(); ++r) limits[r] = max_lens[batch.ids[r]];
    auto rows = decode_batch(source_batch(decoder, sources, batch), limits);
    for (size_t r = 0; r < batch.ids.size(); ++r) out[batch.ids[r]] = std::move(rows[r]);
    if (progress) progress(batch.ids.size());
  }
  return out;
}

}  // namespace

std::vector<std::vector<int32_t>> decode_all(Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                             const std::vector<int64_t>& max_lens, const DecodeTokens& tokens,
                                             const DecodeOptions& opts) {
  std::vector<std::vector<int32_t>> out;
  if (opts.beam_size > 1) {
    for (auto& hyps :
         decode_nbest(decoder, sources, max_lens, tokens, {opts.beam_size, opts.length_penalty, opts.batch_tokens, 1, opts.progress}))
      out.push_back(hyps.empty() ? std::vector<int32_t>{} : std::move(hyps.front().tokens));
  } else {
    out = decode_batches<std::vector<int32_t>>(decoder, sources, max_lens, 1, opts.batch_tokens, opts.progress,
                                               [&](const Tensor& src, const std::vector<int64_t>& limits) {
                                                 return greedy_decode(decoder, src, limits, tokens);
                                               });
  }
  for (auto& o : out)
    if (!o.empty() && o.back() == tokens.eos) o.pop_back();
  return out;
}

std::vector<std::vector<Hypothesis>> decode_nbest(Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                                  const std::vector<int64_t>& max_lens, const DecodeTokens& tokens,
                                                  const DecodeOptions& opts) {
  if (opts.nbest < 1 || opts.nbest > opts.beam_size)
    throw Error("decode: --nbest " + std::to_string(opts.nbest) + " must be from 1 to the beam size " +
                std::to_string(opts.beam_size));
  auto out = decode_batches<std::vector<Hypothesis>>(
      decoder, sources, max_lens, opts.beam_size, opts.batch_tokens, opts.progress,
      [&](const Tensor& src, const std::vector<int64_t>& limits) {
        return beam_search_batch(decoder, src, limits, tokens, {opts.beam_size, opts.length_penalty});
      });
  for (auto& hyps : out)
    if (hyps.size() > static_cast<size_t>(opts.nbest)) hyps.resize(static_cast<size_t>(opts.nbest));
  return out;
}

}  // namespace kiln::models
