#include "models/decode/greedy.h"

#include <algorithm>

#include "engine/ir/error.h"

namespace kiln::models {

std::vector<std::vector<int32_t>> greedy_decode(Decoder& decoder, const Tensor& src,
                                                const std::vector<int64_t>& max_lens, const DecodeTokens& tokens) {
  const Shape src_shape = src.shape();
  const int64_t rows = src_shape.at(0);
  if (static_cast<int64_t>(max_lens.size()) != rows)
    throw Error("greedy_decode: " + std::to_string(max_lens.size()) + " length limits for " + std::to_string(rows) +
                " rows");
  const Tensor memory = decoder.encode(src);
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(rows));
  std::vector<bool> done(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) done[b] = max_lens[b] <= 0;
  const int64_t longest = *std::max_element(max_lens.begin(), max_lens.end());

  // One decoder length for the whole call: a JIT compile costs far more than
  // running a few padded positions.
  const int64_t len = decoder.padded_length(longest);
  for (int64_t t = 0; t < longest && std::find(done.begin(), done.end(), false) != done.end(); ++t) {
    // Prefix bos + the tokens so far, padded; row t predicts token t.
    Tensor::I32 tgt_in = Tensor::I32::from_shape({static_cast<size_t>(rows), static_cast<size_t>(len)});
    tgt_in.fill(decoder.config().pad_id);
    for (int64_t b = 0; b < rows; ++b) {
      tgt_in(b, 0) = tokens.bos;
      for (size_t i = 0; i < out[b].size(); ++i) tgt_in(b, i + 1) = out[b][i];
    }
    const Tensor lp = decoder.log_probs(memory, src, Tensor(std::move(tgt_in)));
    const auto& probs = lp.f32();
    const int64_t vocab = lp.shape().at(2);
    for (int64_t b = 0; b < rows; ++b) {
      if (done[b]) continue;
      int32_t best = 0;
      for (int64_t v = 1; v < vocab; ++v)
        if (probs(b, t, v) > probs(b, t, best)) best = static_cast<int32_t>(v);
      out[b].push_back(best);
      done[b] = best == tokens.eos || static_cast<int64_t>(out[b].size()) >= max_lens[b];
    }
  }
  return out;
}

}  // namespace kiln::models
