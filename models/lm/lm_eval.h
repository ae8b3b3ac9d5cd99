#pragma once
// The language model's loss on text: the dev loss the trainer reports and
// `kiln eval`'s perplexity of a file.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/backend.h"
#include "engine/executable.h"
#include "models/lm/byte_corpus.h"
#include "models/lm/config.h"

namespace kiln::models {

// The mean next-token loss (nats per byte) of a bound loss graph
// (build_lm_loss_graph) over batches of equal size.
double mean_lm_loss(Executable& loss_graph, const std::vector<Tensor>& batches);

struct LmTextScore {
  double loss = 0;  // nats per byte
  int64_t windows = 0, tokens = 0;
};

// The loss of `text` cut into windows of the model's context (dev_batches,
// every window) in batches of up to `batch`.
LmTextScore score_text(const LmConfig& cfg, const std::map<std::string, Tensor>& params, const ByteCorpus& text,
                       int64_t batch, const compiler::BackendOptions& exec);

}  // namespace kiln::models
