#pragma once
// One update of the params, as the training loop asks for it: the update's
// batch cut into this rank's parts (update_parts.h), each run through the
// compiled step of its batch shape (one executable per shape: executable_cache.h).
// The last part's graph applies Adam (build_train_graph; with more than one
// rank it first sums the ranks' gradients, allreduce), the others accumulate
// their weighted gradient (build_accumulate_graph). Then the job's loss, over
// the ranks. --profile's timing of the steps is kept here too.
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend.h"
#include "engine/ir/error.h"
#include "models/optimizer.h"
#include "models/tasks/task.h"
#include "models/run/executable_cache.h"
#include "models/train/trainer.h"
#include "models/train/trainer_state.h"
#include "models/transformer/config.h"

namespace kiln::models {

// The step counter %step is an i32[]: no step may take it past INT32_MAX,
// where it would wrap and be saved wrapped.
inline constexpr int64_t kLastStep = std::numeric_limits<int32_t>::max();

// A step that made a nan or an inf. It commits nothing that is saved: the run
// stops before its next checkpoint. what(): "training diverged at step N: CAUSE".
struct DivergedStep : Error {
  DivergedStep(int64_t step, const std::string& cause);
  int64_t step;
  std::string cause;
};

// What this rank's parts of an update gave.
struct RankStep {
  double loss = 0;     // the parts' losses, each weighted by its share of the update's target tokens
  int64_t tokens = 0;  // the parts' target tokens
  double lr = 0;       // the learning rate the update applied
  double seconds = 0;  // in the compiled steps (compiles not included)
};

// What rank 0 decided after a step (its clock says when the job evaluates,
// saves and stops); every rank learns it with the step's loss.
struct StepDecision {
  bool evaluate = false, save = false, stop = false;
};

// The job's update: the loss summed over the ranks' parts and rank 0's decision.
struct JobStep {
  double loss = 0;
  StepDecision decision;
};

// The ranks' losses, target tokens and rank 0's decision summed in one small
// allreduce (with one rank: this rank's, as they are). kiln::Error when the
// ranks' target tokens do not add up to the update's (ranks that read
// different data), DivergedStep when the loss is not finite.
JobStep job_step(const RankStep& mine, const StepDecision& rank0s, int64_t update_tokens, int64_t step);

class StepRunner {
 public:
  // `state` gives the schedule (lr_factor, warmup) and how an update is cut:
  // into state.parts parts, of which this rank trains state.update_freq,
  // from part rank * update_freq on. profile_runs (--profile, JIT only): each
  // batch shape's step is profiled for its runs 2 to 1 + profile_runs.
  StepRunner(const TransformerConfig& config, const TrainerState& state, int rank, int ranks,
             const compiler::BackendOptions& exec, ExecutableCache::CompileObserver on_compile, int32_t pad_id,
             int32_t bos_id, std::optional<int64_t> profile_runs);

  // A step graph of the smallest shape: its declarations are every param and
  // state the steps share.
  Graph step_graph() const;
  // The params and optimizer state, by name.
  void set_persistent(std::map<std::string, Tensor> tensors) { steps_.set_persistent(std::move(tensors)); }
  const std::map<std::string, Tensor>& persistent() { return steps_.persistent(); }

  // Update number `step` on `whole`, the update's batch: this rank's parts.
  // DivergedStep when --check-numerics stops a part at a non-finite value
  // (before the update commits).
  RankStep run(const Batch& whole, int64_t step);

  // --profile: every profiled step, most trained first. kiln::Error if none was.
  std::vector<ProfiledStep> profiled() const;

 private:
  void profile(Executable& exe, const BatchShape& shape);

  TransformerConfig config_;
  AdamOptions adam_;
  ExecutableCache steps_;
  bool check_numerics_;
  int64_t parts_, first_part_, rank_parts_;
  int32_t pad_id_, bos_id_;
  std::optional<int64_t> profile_runs_;
  struct Profiled {
    BatchShape shape;
    int64_t runs = 0;  // of the step, profiled or not
  };
  std::map<const compiler::JitExecutable*, Profiled> profiled_;
};

}  // namespace kiln::models
