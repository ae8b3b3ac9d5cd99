#include "models/train/step_runner.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "compiler/jit_executable.h"
#include "engine/tensor/collectives.h"
#include "models/train/batch_stream.h"
#include "models/run/train_clock.h"
#include "models/train/update_parts.h"
#include "models/transformer/transformer.h"

namespace kiln::models {

DivergedStep::DivergedStep(int64_t step, const std::string& cause)
    : Error("training diverged at step " + std::to_string(step) + ": " + cause), step(step), cause(cause) {}

JobStep job_step(const RankStep& mine, const StepDecision& rank0s, int64_t update_tokens, int64_t step) {
  JobStep job{mine.loss, rank0s};
  if (collectives().size() > 1) {
    std::array<float, 5> sums = {static_cast<float>(mine.loss), static_cast<float>(mine.tokens),
                                 rank0s.evaluate ? 1.0f : 0.0f, rank0s.save ? 1.0f : 0.0f, rank0s.stop ? 1.0f : 0.0f};
    collectives().allreduce(sums.data(), static_cast<int64_t>(sums.size()), DType::f32);
    job.loss = sums[0];
    if (static_cast<int64_t>(sums[1]) != update_tokens)
      throw Error("the ranks disagree on the data: step " + std::to_string(step) + "'s batch has " +
                  std::to_string(update_tokens) + " target tokens here, the ranks' parts " +
                  std::to_string(static_cast<int64_t>(sums[1])));
    job.decision = {sums[2] > 0, sums[3] > 0, sums[4] > 0};
  }
  if (!std::isfinite(job.loss))
    throw DivergedStep(step, "the loss is " + std::to_string(job.loss) +
                                 " (--check-numerics names the first kernel that makes a nan or inf)");
  return job;
}

namespace {

AdamOptions adam_of(const TransformerConfig& config, const TrainerState& state, int ranks) {
  AdamOptions adam;
  adam.factor = state.lr_factor;
  adam.warmup = state.warmup;
  adam.d_model = config.d_model;
  adam.update_freq = state.update_freq;
  adam.allreduce = ranks > 1;
  return adam;
}

}  // namespace

StepRunner::StepRunner(const TransformerConfig& config, const TrainerState& state, int rank, int ranks,
                       const compiler::BackendOptions& exec, ExecutableCache::CompileObserver on_compile,
                       int32_t pad_id, int32_t bos_id, std::optional<int64_t> profile_runs)
    : config_(config),
      adam_(adam_of(config, state, ranks)),
      steps_(
          [cfg = config_, adam = adam_](const BatchShape& s) {
            return s.accumulate ? build_accumulate_graph(cfg, s.batch, s.src_len, s.tgt_len)
                                : build_train_graph(cfg, s.batch, s.src_len, s.tgt_len, adam);
          },
          exec, std::move(on_compile)),
      check_numerics_(exec.check_numerics),
      parts_(state.parts),
      first_part_(rank * state.update_freq),
      rank_parts_(state.update_freq),
      pad_id_(pad_id),
      bos_id_(bos_id),
      profile_runs_(profile_runs) {}

Graph StepRunner::step_graph() const { return build_train_graph(config_, 1, 1, 1, adam_); }

// Each part weighs its share of the update's target tokens; with one part, the
// graphs have no weight or first-example inputs.
RankStep StepRunner::run(const Batch& whole, int64_t step) {
  const bool cut = parts_ > 1;
  const std::vector<UpdatePart> parts = cut ? cut_update(whole, parts_, first_part_, rank_parts_, pad_id_, bos_id_)
                                            : std::vector<UpdatePart>{{whole, 0, 1.0}};
  RankStep mine;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Batch& batch = parts[i].batch;
    BatchShape shape = shape_of(batch);
    shape.accumulate = i + 1 < parts.size();
    Executable& exe = steps_.get(shape);  // compiles a new shape: not timed
    if (profile_runs_) profile(exe, shape);
    const TrainClockTime start = std::chrono::steady_clock::now();
    exe.bind("src", batch.src);
    exe.bind("tgt_in", batch.tgt_in);
    exe.bind("tgt_out", batch.tgt_out);
    if (cut) {
      exe.bind(kGradWeightInput, Tensor::scalar(static_cast<float>(parts[i].weight)));
      exe.bind(kFirstExampleInput, Tensor(Tensor::I32(static_cast<int32_t>(parts[i].first_example))));
    }
    try {
      exe.run();
    } catch (const Error& e) {
      if (!check_numerics_) throw;
      throw DivergedStep(step, e.what());  // the first kernel that made a nan or inf, before the step's updates commit
    }
    mine.seconds += seconds_since(start);
    mine.loss += parts[i].weight * exe.output("loss").f32()();
    mine.tokens += batch.tgt_tokens;
    if (!shape.accumulate) mine.lr = exe.output("lr").f32()();
  }
  return mine;
}

void StepRunner::profile(Executable& exe, const BatchShape& shape) {
  auto* jit = dynamic_cast<compiler::JitExecutable*>(&exe);
  if (!jit) return;
  Profiled& p = profiled_[jit];
  p.shape = shape;
  if (p.runs == 1) jit->profile(true);  // the first run warmed it up
  if (p.runs == 1 + *profile_runs_) jit->profile(false);
  ++p.runs;
}

std::vector<ProfiledStep> StepRunner::profiled() const {
  std::vector<ProfiledStep> steps;
  for (const auto& [jit, p] : profiled_)
    if (jit->run_profile().runs > 0) steps.push_back({jit, p.shape.str(), p.runs});
  if (steps.empty())
    throw Error("--profile: no step was profiled (each batch shape's first run is its warm-up; train longer)");
  std::stable_sort(steps.begin(), steps.end(),
                   [](const ProfiledStep& a, const ProfiledStep& b) { return a.steps > b.steps; });
  return steps;
}

}  // namespace kiln::models
