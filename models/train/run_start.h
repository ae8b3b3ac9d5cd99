#pragma once
// Where a run starts. A new run takes its model and settings from the options
// and, for what they leave out, the task's recipe (recipe.h), and initializes
// its params and optimizer state from the seed. A continued run takes them
// from its checkpoint: options that would change what shapes its model or
// trajectory are refused, naming the flag and both values (resume_settings.h
// lists what may change).
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"
#include "models/checkpoint.h"
#include "models/tasks/task.h"
#include "models/train/recipe.h"
#include "models/train/trainer.h"
#include "models/train/trainer_state.h"
#include "models/transformer/config.h"

namespace kiln::models {

// kiln::Error for options no run can take (no directory, no or two budgets,
// negative counts, an unknown metric, ...).
void check_train_options(const TrainOptions& o);

// The given preset, else the checkpoint's config on resume, else the recipe's
// preset and regularization; then the options' sizes and regularization, and
// the task's vocabulary. A continued run refuses a preset, size or
// regularization other than its checkpoint's.
TransformerConfig model_config(const TrainOptions& o, const Recipe& recipe, const std::optional<Checkpoint>& ckpt,
                               const Task& task);

// The trainer state a run starts from on `ranks` ranks: a new run's from the
// options and the recipe; a continued run's from its checkpoint, whose seed,
// batch, schedule, --max-train-len, metric and update parts it keeps (its
// parts on whatever rank count divides them).
TrainerState initial_state(const TrainOptions& o, const Recipe& recipe, const std::optional<Checkpoint>& ckpt,
                           int64_t ranks);

// Every param and state that `step_graph` declares: initialized from the seed,
// or the checkpoint's (in `dir`, named in errors), whose tensors must have the
// types the step needs. Gradient accumulators the checkpoint lacks (a run
// continued with more parts per rank) start at zero.
std::map<std::string, Tensor> initial_tensors(const Graph& step_graph, uint64_t seed,
                                              const std::optional<Checkpoint>& ckpt, const std::string& dir);

// kiln::Error unless the step counter among `tensors` is at `step` (a
// checkpoint whose trainer state says otherwise is corrupt) and `steps_asked`
// more steps (at least one) would not take it past kLastStep.
void check_step_counter(const std::map<std::string, Tensor>& tensors, int64_t step, int64_t steps_asked,
                        const std::string& dir);

}  // namespace kiln::models
