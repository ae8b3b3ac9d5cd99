#pragma once
// Choosing the model to keep (JoeyNMT's and fairseq's habit): every dev
// evaluation scores the model by one metric (dev loss: lower is better; BLEU or
// chrF: higher is better). The best so far is kept in DIR/best/; with keep > 1 the
// `keep` best evaluations are also kept in DIR/best-snapshots/step-NNNNNNNN/,
// listed with their scores in DIR/best-snapshots/scores.json, for
// `kiln average --best K`, without the optimizer state (params_only: they are
// averaged, evaluated and translated, not trained on). Each kept directory
// holds the task's files too, so it evaluates and translates by itself.
#include <cstdint>
#include <string>
#include <vector>

#include "models/checkpoint.h"

namespace kiln::models {

// kiln::Error unless metric is loss, bleu or chrf.
void check_metric(const std::string& metric);
// Whether `score` beats `best` by `metric`.
bool better(const std::string& metric, double score, double best);

// DIR/best
std::string best_dir(const std::string& dir);

// Writes ckpt (an evaluation at `step` scoring `score`) as DIR/best when
// `is_best`, and among DIR/best-snapshots when keep > 1 and it is one of the
// `keep` best there, dropping the one it displaces. Everything atomically.
void keep_if_best(const std::string& dir, const Checkpoint& ckpt, int64_t step, const std::string& metric,
                  double score, bool is_best, int64_t keep);

// The run directory a checkpoint directory belongs to: DIR for DIR/best,
// DIR/best-snapshots/step-N and DIR/snapshots/step-N of a run DIR (one holding
// its own checkpoint); any other checkpoint directory is its own. Symlinks and
// ".." resolved.
std::string run_of(const std::string& checkpoint_dir);

// The directories of the k best kept evaluations, best first. kiln::Error if DIR
// keeps fewer than k (naming --keep-best).
std::vector<std::string> best_snapshots(const std::string& dir, int64_t k);

}  // namespace kiln::models
