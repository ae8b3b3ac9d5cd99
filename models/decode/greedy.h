#pragma once
// Greedy decoding of a batch: one decoder step per position (step_decoder.h),
// each row taking its most likely next token among those it may produce
// (DecodeTokens::never: padding, unknown, bos). Rows stop at eos or at their
// length limit.
#include <cstdint>
#include <vector>

#include "engine/tensor/tensor.h"
#include "models/decode/step_decoder.h"

namespace kiln::models {

// What decoding needs to know about the vocabulary (models/tasks/task.h).
struct DecodeTokens {
  int32_t bos = 1;
  int32_t eos = -1;            // -1: no end token, every row runs to its limit
  std::vector<int32_t> never{};  // ids never produced (masked out of every step's log-probs)

  // allowed[id] == 1 for the ids of a vocab-sized row that may be produced: a
  // decoder looks each id up once per step and row, `never` may be long.
  std::vector<char> allowed(int64_t vocab) const {
    std::vector<char> mask(static_cast<size_t>(vocab), 1);
    for (int32_t id : never)
      if (id >= 0 && id < vocab) mask[static_cast<size_t>(id)] = 0;
    return mask;
  }
};

// src i32[B,S]; max_lens[b]: the most tokens row b may produce (its limit).
// Returns each row's tokens without bos, ending with eos if it produced one.
// Ties between tokens go to the lowest id.
std::vector<std::vector<int32_t>> greedy_decode(StepDecoder& decoder, const Tensor& src,
                                                const std::vector<int64_t>& max_lens, const DecodeTokens& tokens);

}  // namespace kiln::models
