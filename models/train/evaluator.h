#pragma once
// The trainer's dev evaluations: the dev loss of the current params (as in
// training, without dropout, on the batch shapes training uses) and greedy
// decoding's BLEU, chrF and exact match on the first dev sentences
// (evaluate.h); each recorded in the trainer state's history, with whether it
// beats the best so far by the run's metric, which the checkpoint keeper
// (checkpoint_keeper.h) and --patience read.
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "compiler/backend.h"
#include "models/decode/decoder.h"
#include "models/tasks/task.h"
#include "models/train/evaluate.h"
#include "models/run/executable_cache.h"
#include "models/train/trainer_state.h"
#include "models/transformer/config.h"

namespace kiln::models {

struct DevEvaluation {
  int64_t step = 0;
  double loss = 0;
  DecodeScores decoding;  // greedy, of the first dev sentences
  double score = 0;       // by the run's metric (loss, bleu or chrf)
  bool is_best = false;   // the best so far by that metric
};

class Evaluator {
 public:
  // Decodes the first `sentences` dev sentences.
  Evaluator(const Task& task, const TransformerConfig& config, const compiler::BackendOptions& exec,
            const ExecutableCache::CompileObserver& on_compile, int64_t sentences);

  // Evaluates `params` (the model at state.step), appends the dev loss, BLEU
  // and chrF to the state's history and records the score (record_best).
  DevEvaluation evaluate(const std::map<std::string, Tensor>& params, TrainerState& state);

 private:
  const Task& task_;
  TransformerConfig config_;
  compiler::BackendOptions exec_;
  ExecutableCache::CompileObserver on_compile_;
  int64_t sentences_;
  ExecutableCache losses_;
  std::optional<Decoder> decoder_;  // made at the first evaluation
};

// Whether `score`, at state.step, beats the state's best by state.best_metric
// (the first score always does): then it becomes the best and
// evals_since_best restarts at 0; otherwise evals_since_best counts it.
bool record_best(TrainerState& state, double score);

// "dev at step 300 (1.2 min): loss 2.3456, greedy on 200 sentences: BLEU = ..., chrF2 = ..., exact match 12.0%",
// after `minutes` of training.
std::string dev_text(const DevEvaluation& dev, double minutes);

}  // namespace kiln::models
