#pragma once
// What greedy and beam search drive: a batch of rows decoded one position at a
// time. The Transformer's Decoder (decoder.h) implements it over cached keys
// and values; tests also implement it by re-running the full decoder over each
// prefix, to check the cache against.
#include <cstdint>
#include <vector>

#include "engine/tensor/tensor.h"

namespace kiln::models {

class StepDecoder {
 public:
  virtual ~StepDecoder() = default;

  // Starts a batch: src i32[B,S] (padded with the config's pad_id), each
  // source row decoded by `copies` consecutive rows (beam search's
  // hypotheses), B * copies rows in all, for at most `steps` steps.
  virtual void start(const Tensor& src, int64_t copies, int64_t steps) = 0;
  // Feeds each row its token at the next position (bos first) and returns the
  // log-probs f32[rows, V] of the token after it; valid until the next call.
  virtual const Tensor& step(const std::vector<int32_t>& tokens) = 0;
  // Row r continues as row parents[r] would, from its source and what it has
  // seen so far (beam search keeping its best hypotheses); one parent per row,
  // any row any number of times.
  virtual void reorder(const std::vector<int32_t>& parents) = 0;
};

}  // namespace kiln::models
