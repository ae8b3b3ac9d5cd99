#pragma once
// Text from a trained language model, one token at a time over cached keys and
// values: the step graph (lm.h) is compiled once for the cache's length and
// runs once per position, prompt included, so a token costs one position's
// work however long the text before it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/backend.h"
#include "engine/executable.h"
#include "models/lm/config.h"
#include "models/lm/sampler.h"

namespace kiln::models {

class LmGenerator {
 public:
  // Binds `params` (every param of the config, by name) to the step graph of a
  // cache of `cache_len` positions (<= cfg.max_len), batch 1.
  LmGenerator(const LmConfig& cfg, const std::map<std::string, Tensor>& params, int64_t cache_len,
              const compiler::BackendOptions& exec);

  int64_t cache_len() const { return cache_len_; }

  // The prompt's tokens (empty: a line break starts the text), then up to
  // max_tokens tokens drawn by `sampler`, each passed to `emit` as it is drawn;
  // returns the drawn tokens. Stops early when the cache is full. kiln::Error
  // for a prompt that fills the cache.
  std::vector<int32_t> generate(std::vector<int32_t> prompt, int64_t max_tokens, Sampler& sampler,
                                const std::function<void(int32_t)>& emit = {});

 private:
  // Runs position `pos` on `token`; returns its log-probs row.
  const float* step(int32_t token, int64_t pos);

  LmConfig cfg_;
  int64_t cache_len_;
  std::unique_ptr<Executable> exe_;
};

}  // namespace kiln::models
