#pragma once
// `kiln train --model lm`: trains the language model on a plain-text corpus
// (byte tokens, byte_corpus.h) for a budget of minutes or steps, with a live
// progress line, the dev loss and perplexity at each fifth of the budget (or
// every --eval-minutes / --eval-every), DIR/log.jsonl, DIR/loss_curve.svg and
// an atomic checkpoint at each evaluation. A directory that holds a run is
// continued on the same trajectory: the batches are drawn from (seed, step).
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend.h"
#include "models/lm/config.h"

namespace kiln::models {

// Each setting left unset takes the default (LmConfig's, and below), or the
// checkpoint's when the run continues; one given that differs from the
// checkpoint's is an error naming its flag.
struct LmSettings {
  std::optional<int64_t> d_model, heads, d_ff, layers, context, max_len;
  std::optional<std::string> positions, norm;
  std::optional<double> dropout;
  std::optional<int64_t> batch;   // sequences of `context` tokens per step; default 32
  std::optional<double> lr;       // the peak learning rate, reached at the end of the warm-up; default 1e-3
  std::optional<int64_t> warmup;  // steps; default 100
  std::optional<uint64_t> seed;   // param init, dropout and batches; default 0
};

struct LmTrainOptions {
  std::string train, valid;  // a text file, or a folder of them
  std::string checkpoint_dir;
  LmSettings settings;
  double minutes = 0;       // exactly one of minutes and steps is > 0: the run's training time,
  int64_t steps = 0;        // or the steps of this call
  double eval_minutes = 0;  // between dev evaluations and saves; with eval_every 0 too: each fifth of the budget
  int64_t eval_every = 0;
  int64_t dev_windows = 256;  // dev windows of `context` tokens, spread over the dev file
  int64_t log_every = 100;    // steps between progress lines when the log is not a terminal
  compiler::BackendOptions exec;
  std::ostream* log = nullptr;  // nullptr: std::cerr
};

struct LmEvalPoint {
  int64_t step = 0;
  double minutes = 0;
  double loss = 0;  // nats per byte
};

struct LmTrainResult {
  int64_t first_step = 0, last_step = 0;
  LmConfig config;
  std::vector<LmEvalPoint> dev;
  double tokens_per_second = 0;  // this call's
  double train_minutes = 0;      // the whole run's
};

// kiln::Error for bad options or files (naming them), a checkpoint of another
// model or settings, or a loss that stops being finite (the last checkpoint stays).
LmTrainResult train_lm(const LmTrainOptions& opts);

}  // namespace kiln::models
