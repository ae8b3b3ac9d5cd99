#pragma once
// The log-prob a step decoder gives a whole sequence, and the special ids, for the decode suites.
#include <cstdint>
#include <vector>

#include "models/decode/step_decoder.h"

namespace kiln::test {

// The decode suites' models' bos and eos ids.
inline constexpr int32_t kBos = 1, kEos = 3;

// The sum of log-probs `decoder` gives `tokens` after bos, for src i32[1,S]
// alone (one row, fed the tokens themselves).
inline double sequence_log_prob(models::StepDecoder& decoder, const Tensor& src, const std::vector<int32_t>& tokens,
                                int32_t bos) {
  decoder.start(src, 1, static_cast<int64_t>(tokens.size()));
  double sum = 0;
  int32_t fed = bos;
  for (int32_t token : tokens) {
    sum += decoder.step({fed}).f32()(0, token);
    fed = token;
  }
  return sum;
}

}  // namespace kiln::test
