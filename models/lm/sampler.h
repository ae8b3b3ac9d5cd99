#pragma once
// Choosing the next token from a model's log-probs: greedy, or sampled with a
// temperature, top-k and top-p (nucleus, Holtzman et al.), from a counter-based
// stream so that a seed gives the same text on every machine.
#include <cstdint>

#include "models/tasks/counter_rng.h"

namespace kiln::models {

struct SamplingOptions {
  double temperature = 1.0;  // 0: greedy (the most likely token)
  int64_t top_k = 0;         // keep the k most likely tokens; 0: all
  double top_p = 1.0;        // keep the fewest most likely tokens whose mass reaches p
  uint64_t seed = 0;
};

class Sampler {
 public:
  // `stream` tells the samples of one seed apart (kiln generate -n: the sample's number).
  Sampler(const SamplingOptions& opts, uint64_t stream) : opts_(opts), rng_(opts.seed, stream) {}
  // The next token of log_probs[0, vocab).
  int32_t next(const float* log_probs, int64_t vocab);

 private:
  SamplingOptions opts_;
  CounterRng rng_;
};

}  // namespace kiln::models
