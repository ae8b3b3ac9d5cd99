#pragma once
// Optimizers as graph ops: they append the gradient and the in-place updates of
// params and state (via assign) to a loss graph, so that one graph is one whole
// training step. Both keep a step counter, state %step : i32[] (0 before the
// first step), which dropout nodes may use as their key.
#include <string>

#include "engine/ir/graph.h"

namespace kiln {

struct SgdOptions {
  double lr = 0.1;
};

// Adam (Kingma & Ba) with the Transformer paper's warm-up schedule
//   lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
// for step = 1, 2, ...; with `constant_lr` > 0 the schedule is replaced by it.
struct AdamOptions {
  double beta1 = 0.9;
  double beta2 = 0.98;
  double eps = 1e-9;
  double factor = 1.0;
  int64_t d_model = 512;
  int64_t warmup = 4000;
  double constant_lr = 0.0;
};

// The name of the step counter state, and the name of the learning-rate output.
inline const std::string kStepState = "step";
inline const std::string kLearningRateOutput = "lr";

// Each appends: grad(loss, every param), the updates, `assign`s for every param
// and state it changes, and outputs `loss` and `lr` (in that order) unless the
// graph already outputs them. Declares %step if the graph has no such state;
// Adam declares state %<param>.adam_m and %<param>.adam_v (zeros) per param.
// Throws kiln::Error if the graph has no params or if a param is already assigned.
void append_sgd(Graph& g, Value loss, const SgdOptions& opts);
void append_adam(Graph& g, Value loss, const AdamOptions& opts);

}  // namespace kiln
