#include "models/decode/decode_all.h"

#include <algorithm>
#include <bit>
#include <numeric>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

// Rows `ids` of `sources` as src i32[rows, S] padded with pad_id, S one of the
// decoder's padded lengths; rows past ids.size() repeat the first (filler,
// never read).
Tensor source_batch(const Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                    const std::vector<size_t>& ids, int64_t rows) {
  size_t longest = 1;
  for (size_t i : ids) longest = std::max(longest, sources[i].size());
  const int64_t len = decoder.padded_length(static_cast<int64_t>(longest));
  Tensor::I32 src = Tensor::I32::from_shape({static_cast<size_t>(rows), static_cast<size_t>(len)});
  src.fill(decoder.config().pad_id);
  for (int64_t r = 0; r < rows; ++r) {
    const auto& s = sources[ids[std::min(static_cast<size_t>(r), ids.size() - 1)]];
    std::copy(s.begin(), s.end(), src.begin() + r * len);
  }
  return Tensor(std::move(src));
}

void drop_eos(std::vector<int32_t>& tokens, int32_t eos) {
  if (!tokens.empty() && tokens.back() == eos) tokens.pop_back();
}

}  // namespace

std::vector<std::vector<int32_t>> decode_all(Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                             const std::vector<int64_t>& max_lens, const DecodeTokens& tokens,
                                             const DecodeOptions& opts) {
  if (max_lens.size() != sources.size())
    throw Error("decode: " + std::to_string(max_lens.size()) + " length limits for " + std::to_string(sources.size()) +
                " sentences");
  for (size_t i = 0; i < sources.size(); ++i)
    if (sources[i].empty()) throw Error("decode: sentence " + std::to_string(i + 1) + " has no tokens");
  std::vector<std::vector<int32_t>> out(sources.size());

  if (opts.beam_size > 1) {
    for (size_t i = 0; i < sources.size(); ++i) {
      const auto hyps = beam_search(decoder, source_batch(decoder, sources, {i}, 1), max_lens[i], tokens,
                                    {opts.beam_size, opts.length_penalty});
      if (!hyps.empty()) out[i] = hyps.front().tokens;
      drop_eos(out[i], tokens.eos);
    }
    return out;
  }

  std::vector<size_t> order(sources.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return sources[a].size() < sources[b].size(); });
  // Few sentences run as a smaller power-of-two batch, not one padded with
  // fillers.
  const size_t batch = std::min(static_cast<size_t>(std::max<int64_t>(opts.batch, 1)), std::bit_ceil(order.size()));
  for (size_t begin = 0; begin < order.size(); begin += batch) {
    const std::vector<size_t> ids(order.begin() + static_cast<ptrdiff_t>(begin),
                                  order.begin() + static_cast<ptrdiff_t>(std::min(begin + batch, order.size())));
    // Filler rows generate nothing (limit 0).
    std::vector<int64_t> limits(batch, 0);
    for (size_t r = 0; r < ids.size(); ++r) limits[r] = max_lens[ids[r]];
    auto rows =
        greedy_decode(decoder, source_batch(decoder, sources, ids, static_cast<int64_t>(batch)), limits, tokens);
    for (size_t r = 0; r < ids.size(); ++r) {
      out[ids[r]] = std::move(rows[r]);
      drop_eos(out[ids[r]], tokens.eos);
    }
  }
  return out;
}

}  // namespace kiln::models
