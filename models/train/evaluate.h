#pragma once
// Scoring a model on a split: decoding quality (corpus BLEU, chrF2, exact match) and
// the loss (label-smoothed, as in training, without dropout).
#include <cstdint>
#include <string>
#include <vector>

#include "models/decode/decode_all.h"
#include "models/eval/bleu.h"
#include "models/eval/chrf.h"
#include "models/tasks/task.h"
#include "models/run/executable_cache.h"

namespace kiln::models {

struct DecodeScores {
  Bleu bleu;
  Chrf chrf;                            // sacreBLEU's default chrF2
  double exact_match = 0;               // share of sentences decoded exactly as their target
  std::vector<std::string> hypotheses;  // task.decode of each decoded sentence
  std::vector<std::string> references;  // the examples' target texts
};

// Decodes the first `limit` examples of `split` (all when limit <= 0).
DecodeScores evaluate_decoding(const Task& task, Decoder& decoder, Split split, int64_t limit,
                               const DecodeOptions& opts);

// The mean loss per target token over the examples of `split` in bucket shapes
// with S and T at most max_len (0: all), from loss graphs (build_loss_graph,
// dropout off) whose cache holds the current params.
double evaluate_loss(const Task& task, ExecutableCache& loss_graphs, Split split, int64_t tokens_per_batch,
                     int64_t max_len);

// The limits and tokens decoding needs from a task.
DecodeTokens decode_tokens(const Task& task);

}  // namespace kiln::models
