#include "models/decode/greedy.h"

#include <algorithm>

#include "engine/ir/error.h"

namespace kiln::models {

std::vector<std::vector<int32_t>> greedy_decode(StepDecoder& decoder, const Tensor& src,
                                                const std::vector<int64_t>& max_lens, const DecodeTokens& tokens) {
  const int64_t rows = src.shape().at(0);
  if (static_cast<int64_t>(max_lens.size()) != rows)
    throw Error("greedy_decode: " + std::to_string(max_lens.size()) + " length limits for " + std::to_string(rows) +
                " rows");
  std::vector<std::vector<int32_t>> out(static_cast<size_t>(rows));
  std::vector<bool> done(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) done[b] = max_lens[b] <= 0;
  const int64_t longest = *std::max_element(max_lens.begin(), max_lens.end());
  if (longest <= 0) return out;

  decoder.start(src, 1, longest);
  // Each row's last token; rows that are done get bos (any valid token: their
  // results are not read).
  std::vector<int32_t> fed(static_cast<size_t>(rows), tokens.bos);
  std::vector<char> allowed;
  while (std::find(done.begin(), done.end(), false) != done.end()) {
    const Tensor& lp = decoder.step(fed);
    const int64_t vocab = lp.shape().at(1);
    if (allowed.empty()) allowed = tokens.allowed(vocab);
    for (int64_t b = 0; b < rows; ++b) {
      if (done[b]) continue;
      const float* row = lp.f32().data() + b * vocab;
      int32_t best = -1;
      for (int32_t v = 0; v < static_cast<int32_t>(vocab); ++v)
        if (allowed[static_cast<size_t>(v)] && (best < 0 || row[v] > row[best])) best = v;
      if (best < 0) throw Error("greedy_decode: every token of the vocabulary is excluded");
      out[b].push_back(best);
      done[b] = best == tokens.eos || static_cast<int64_t>(out[b].size()) >= max_lens[b];
      fed[b] = done[b] ? tokens.bos : best;
    }
  }
  return out;
}

}  // namespace kiln::models
