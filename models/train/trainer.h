#pragma once
// `kiln train`: trains the Transformer on a task, with a live progress line,
// periodic dev loss and BLEU (and exact match for copy), a loss curve as SVG
// and atomic checkpoints that --resume continues on the same loss trajectory.
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend.h"
#include "compiler/jit_executable.h"
#include "models/tasks/text_corpus_prep.h"

namespace kiln::models {

// A batch shape's training step as --profile timed it: its shape ("32x24x25")
// and how many steps of the run it trained.
struct ProfiledStep {
  const compiler::JitExecutable* step = nullptr;
  std::string shape;
  int64_t steps = 0;
};

struct TrainOptions {
  std::string task = "copy";  // copy | de-en | text
  // text: the user's corpus, prepared into prepared_dir (default CHECKPOINT/data)
  // on a new run, or reused from there (models/tasks/text_corpus_prep.h).
  TextTaskOptions text;
  std::string prepared_dir;
  // A preset of models/transformer/config.h; empty: the recipe's (recipe.h), or the checkpoint's on resume.
  // Settings left 0 (or -1) take the task's recipe for the budget, or the checkpoint's on resume.
  std::string config;
  // Override the preset's sizes when > 0 (layers: encoder and decoder each).
  int64_t d_model = 0, heads = 0, d_ff = 0, layers = 0;
  double dropout = -1;          // the recipe's (or the checkpoint's) when < 0
  double label_smoothing = -1;  // the recipe's (or the checkpoint's) when < 0
  bool unfused_loss = false;  // the loss as matmul then cross_entropy (TransformerConfig::fused_loss)
  std::string checkpoint_dir;
  // Budget: training wall time (compiles included; dev evaluations and checkpoint
  // writes not). Exactly one of minutes and steps is > 0.
  double minutes = 0;
  int64_t steps = 0;    // step budget (steps of this call, resumed or not)
  // A checkpoint_dir that holds a run is continued whatever this says; true
  // requires one (an error if there is none).
  bool resume = false;
  // Param init, dropout and batch order; unset: 0, or the checkpoint's on resume.
  std::optional<uint64_t> seed;
  compiler::BackendOptions exec;
  int64_t batch_tokens = 0;  // target tokens per batch; 0: the recipe's
  // Train (and measure the dev loss) only on bucket shapes with S and T at most
  // this; 0: all. Each bucket shape costs a JIT compile of the training step.
  int64_t max_train_len = 0;
  int64_t update_freq = 0;  // parts per update on each rank (gradient accumulation, update_parts.h); 0: 1, or the checkpoint's parts / ranks on resume
  int64_t warmup = 0;                               // Adam warm-up steps; 0: the recipe's
  double lr_factor = 0;                             // the schedule's factor; 0: the recipe's
  // When to evaluate and save; all three 0: at each fifth of the budget (eval_cadence.h).
  int64_t eval_every = 0;   // steps between dev evaluations; 0: none
  double eval_minutes = 0;  // minutes of training time between dev evaluations and saves; 0: none
  int64_t save_every = 0;   // steps between checkpoints; 0: none
  int64_t keep_snapshots = 5;  // also keep the params of the last N saves as snapshots (checkpoint_average.h); 0: none
  // Choosing the model to keep (models/best_checkpoints.h): the dev metric (loss,
  // bleu or chrf; empty: bleu, or the checkpoint's on resume), early stopping after
  // `patience` evaluations in a row that do not beat the best (0: never), and how
  // many of the best evaluations to keep for `kiln average --best K`.
  std::string best_metric;
  int64_t patience = 0;
  int64_t keep_best = 3;
  int64_t eval_sentences = 200;                     // dev sentences decoded for BLEU and exact match
  std::string data_dir = "/usr/share/trans/de-en";  // de-en: the trans-de-en dictionary
  int64_t log_every = 100;                          // steps between progress lines when the log is not a terminal
  std::ostream* log = nullptr;                      // progress and evaluations; nullptr: std::cerr
  // --profile (jit): each batch shape's training step is profiled for its runs 2
  // to 1 + profile_runs (compiler/run_profile.h); when training ends, `profile`
  // is called with every profiled step, most trained first.
  std::function<void(const std::vector<ProfiledStep>&)> profile;
  int64_t profile_runs = 50;
};

struct EvalPoint {
  int64_t step = 0;
  double loss = 0;
};

struct TrainResult {
  int64_t first_step = 0,
          last_step = 0;                // steps run this call: first_step..last_step
  std::vector<EvalPoint> train_losses;  // every step of the whole run, resumes included
  std::vector<EvalPoint> dev_losses;    // every dev evaluation
  double exact_match = -1;              // last dev exact match (copy), -1 if not measured
  double bleu = -1;                     // last dev BLEU, -1 if not measured
  double chrf = -1;                     // last dev chrF, -1 if not measured
  int64_t best_step = -1;               // the best evaluation's step (DIR/best), -1 if none
  double best_score = 0;                // its score by the metric
  bool stopped_early = false;           // --patience ended the run
  double tokens_per_second = 0;         // target tokens of this call's steps / their time
  double train_minutes = 0;             // training time of the whole run (resumes included)
  bool budget_spent = false;  // a resume whose --minutes were already trained: nothing trained, nothing written
};

// A checkpoint directory that holds a run continues it: the checkpoint's task,
// model, seed, batch size, warm-up and learning-rate factor carry on (they shape
// the trajectory); options that differ from them are an error naming the flag
// and both values (resume_settings.h lists what may change). Throws kiln::Error
// for bad options, a missing data package, --resume without a checkpoint,
// a checkpoint of another task or config,
// or a loss that stops being finite (nothing is saved then: the last checkpoint
// stays).
TrainResult train(const TrainOptions& opts);

}  // namespace kiln::models
