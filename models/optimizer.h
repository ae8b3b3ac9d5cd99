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
  // Gradient accumulation (--update-freq N, N > 1): the gradient Adam applies is
  // the accumulated %<param>.grad_acc plus this graph's own, weighted by input
  // %grad_weight (append_gradient_accumulation); grad_acc is then zeroed.
  int64_t update_freq = 1;
  // Data parallelism (mpirun -np N kiln train): the gradient Adam applies is the
  // sum over the ranks (an allreduce) of each rank's gradient weighted by input
  // %grad_weight, its share of the update's target tokens over all ranks (with
  // update_freq > 1, of its accumulated gradient plus this batch's). With one
  // rank the allreduce is the identity.
  bool allreduce = false;
};

// The name of the step counter state, and the name of the learning-rate output.
inline const std::string kStepState = "step";
inline const std::string kLearningRateOutput = "lr";
// Gradient accumulation: the weight of a batch's gradient in its update (its
// share of the update's target tokens, so N batches weigh as one batch N times
// as large), and each param's accumulated gradient, state NAME.grad_acc.
inline const std::string kGradWeightInput = "grad_weight";
inline const std::string kGradAccSuffix = ".grad_acc";
// The model scope of the update's nodes (the step, the learning rate, each
// param's update); the gradients are the backward of their forward's scopes.
inline const std::string kOptimizerScope = "optimizer";

// Each appends: grad(loss, every param), the updates, `assign`s for every param
// and state it changes, and outputs `loss` and `lr` (in that order) unless the
// graph already outputs them. Declares %step if the graph has no such state;
// Adam declares state %<param>.adam_m and %<param>.adam_v (zeros) per param.
// Throws kiln::Error if the graph has no params or if a param is already assigned.
void append_sgd(Graph& g, Value loss, const SgdOptions& opts);
void append_adam(Graph& g, Value loss, const AdamOptions& opts);

// One batch of an update that is not its last: adds %grad_weight * grad(loss,
// param) into state %<param>.grad_acc (zeros at first) for every param, changes
// nothing else, and outputs `loss`.
void append_gradient_accumulation(Graph& g, Value loss);

}  // namespace kiln
