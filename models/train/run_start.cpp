#include "models/train/run_start.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "engine/ir/error.h"
#include "engine/param_init.h"
#include "models/best_checkpoints.h"
#include "models/optimizer.h"
#include "models/train/resume_settings.h"
#include "models/train/step_runner.h"

namespace kiln::models {
namespace {

// A continued run keeps its model: a preset, size or regularization given
// again must be the checkpoint's.
void check_same_model(const TrainOptions& o, const TransformerConfig& run, const std::string& dir) {
  const auto refuse = [&](const std::string& flag, const std::string& given, const std::string& runs) {
    throw Error(changed_setting_message(flag, given, runs, dir));
  };
  const std::string preset = run.name.substr(0, run.name.find('+'));
  if (!o.config.empty() && o.config != preset) refuse("--config", o.config, preset);
  const std::pair<const char*, std::pair<int64_t, int64_t>> sizes[] = {{"--d-model", {o.d_model, run.d_model}},
                                                                       {"--heads", {o.heads, run.heads}},
                                                                       {"--d-ff", {o.d_ff, run.d_ff}},
                                                                       {"--layers", {o.layers, run.enc_layers}}};
  for (const auto& [flag, values] : sizes)
    if (values.first > 0 && values.first != values.second)
      refuse(flag, std::to_string(values.first), std::to_string(values.second));
  const auto rate = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return std::string(text);
  };
  if (o.dropout >= 0 && o.dropout != run.dropout) refuse("--dropout", rate(o.dropout), rate(run.dropout));
  if (o.label_smoothing >= 0 && o.label_smoothing != run.label_smoothing)
    refuse("--label-smoothing", rate(o.label_smoothing), rate(run.label_smoothing));
}

// A resumed run keeps the settings that shape its trajectory.
template <class T>
void keep_setting(const char* flag, T given, T stored, bool is_given, const std::string& dir) {
  const auto text = [](T v) {
    if constexpr (std::is_integral_v<T>) {
      return std::to_string(v);
    } else {
      char digits[32];
      std::snprintf(digits, sizeof digits, "%g", v);
      return std::string(digits);
    }
  };
  if (is_given && given != stored) throw Error(changed_setting_message(flag, text(given), text(stored), dir));
}

// A resumed run keeps its updates' parts (the batch it trains on), on
// whatever rank count divides them: 2 ranks x --update-freq 2 continue as 4
// ranks, or as one process with --update-freq 4, on the same trajectory.
void keep_parts(const TrainOptions& o, TrainerState& s, int64_t ranks) {
  const std::string was = std::to_string(s.parts) + " parts of " + std::to_string(s.batch_tokens) + " tokens (" +
                          std::to_string(s.ranks) + " rank(s) x --update-freq " + std::to_string(s.update_freq) + ")";
  if (o.update_freq > 0 && o.update_freq * ranks != s.parts)
    throw Error("--resume: --update-freq " + std::to_string(o.update_freq) + " on " + std::to_string(ranks) +
                " rank(s) makes updates of " + std::to_string(o.update_freq * ranks) +
                " parts; the checkpoint's were " + was + " (leave --update-freq out to continue the run)");
  if (s.parts % ranks != 0)
    throw Error("--resume: the checkpoint's updates were " + was + ", which " + std::to_string(ranks) +
                " ranks cannot share evenly: run it on a rank count that divides " + std::to_string(s.parts));
  s.update_freq = s.parts / ranks;
  s.ranks = ranks;
}

}  // namespace

void check_train_options(const TrainOptions& o) {
  if (o.checkpoint_dir.empty()) throw Error("--checkpoint: a directory is required");
  if ((o.minutes > 0) == (o.steps > 0)) throw Error("give exactly one of --minutes and --steps");
  if (o.minutes < 0 || o.steps < 0) throw Error("--minutes and --steps must be positive");
  if (o.batch_tokens < 0 || o.warmup < 0 || o.lr_factor < 0 || o.eval_every < 0 || o.eval_minutes < 0 ||
      o.save_every < 0 || o.max_train_len < 0 || o.keep_snapshots < 0 || o.update_freq < 0)
    throw Error(
        "--batch-tokens, --warmup, --lr-factor, --eval-every, --eval-minutes, --save-every, --max-train-len and "
        "--keep-snapshots must not be negative");
  if (o.dropout >= 1) throw Error("--dropout must be below 1");
  if (!o.best_metric.empty()) check_metric(o.best_metric);
  if (o.patience < 0 || o.keep_best < 1) throw Error("--patience must not be negative, --keep-best at least 1");
  if (o.label_smoothing >= 1) throw Error("--label-smoothing must be below 1");
}

TransformerConfig model_config(const TrainOptions& o, const Recipe& recipe, const std::optional<Checkpoint>& ckpt,
                               const Task& task) {
  if (ckpt) check_same_model(o, ckpt->config, o.checkpoint_dir);
  TransformerConfig c = !o.config.empty() ? preset_config(o.config)
                        : ckpt            ? ckpt->config
                                          : preset_config(recipe.config);
  if (!ckpt) {
    c.dropout = recipe.dropout;
    c.label_smoothing = recipe.label_smoothing;
  }
  const bool custom = o.d_model > 0 || o.heads > 0 || o.d_ff > 0 || o.layers > 0;
  if (o.d_model > 0) c.d_model = o.d_model;
  if (o.heads > 0) c.heads = o.heads;
  if (o.d_ff > 0) c.d_ff = o.d_ff;
  if (o.layers > 0) c.enc_layers = c.dec_layers = o.layers;
  if (custom && c.name.find('+') == std::string::npos) c.name += "+custom";
  if (o.dropout >= 0) c.dropout = o.dropout;
  if (o.label_smoothing >= 0) c.label_smoothing = o.label_smoothing;
  if (o.unfused_loss) c.fused_loss = false;
  c.vocab = task.vocab_size();
  c.pad_id = task.pad_id();
  validate(c);
  return c;
}

TrainerState initial_state(const TrainOptions& o, const Recipe& d, const std::optional<Checkpoint>& ckpt,
                           int64_t ranks) {
  if (!ckpt) {
    TrainerState s;
    s.seed = o.seed.value_or(0);
    s.batch_tokens = o.batch_tokens > 0 ? o.batch_tokens : d.batch_tokens;
    s.warmup = o.warmup > 0 ? o.warmup : d.warmup;
    s.lr_factor = o.lr_factor > 0 ? o.lr_factor : d.lr_factor;
    s.max_train_len = o.max_train_len;
    s.best_metric = o.best_metric.empty() ? "bleu" : o.best_metric;
    s.update_freq = o.update_freq > 0 ? o.update_freq : 1;
    s.ranks = ranks;
    s.parts = s.update_freq * ranks;
    return s;
  }
  TrainerState s = trainer_state_from_json(ckpt->trainer_state);
  keep_parts(o, s, ranks);
  const std::string& dir = o.checkpoint_dir;
  keep_setting("--seed", o.seed.value_or(0), s.seed, o.seed.has_value(), dir);
  keep_setting("--batch-tokens", o.batch_tokens, s.batch_tokens, o.batch_tokens > 0, dir);
  keep_setting("--warmup", o.warmup, s.warmup, o.warmup > 0, dir);
  keep_setting("--lr-factor", o.lr_factor, s.lr_factor, o.lr_factor > 0, dir);
  keep_setting("--max-train-len", o.max_train_len, s.max_train_len, o.max_train_len > 0, dir);
  if (!o.best_metric.empty() && o.best_metric != s.best_metric)
    throw Error(changed_setting_message("--best-metric", o.best_metric, s.best_metric, dir));
  return s;
}

std::map<std::string, Tensor> initial_tensors(const Graph& step_graph, uint64_t seed,
                                              const std::optional<Checkpoint>& ckpt, const std::string& dir) {
  std::map<std::string, Tensor> tensors;
  for (Value v : step_graph.declarations()) {
    const ValueInfo& decl = step_graph.value(v);
    if (decl.kind == ValueKind::input) continue;
    if (!ckpt) {
      tensors.emplace(decl.name, initial_value(decl, seed));
      continue;
    }
    auto it = ckpt->tensors.find(decl.name);
    // A run resumed with more parts per rank than it had (another rank count, or
    // --update-freq): its accumulators start at zero, as they are between updates.
    if (it == ckpt->tensors.end() && decl.kind == ValueKind::state && decl.name.ends_with(kGradAccSuffix)) {
      tensors.emplace(decl.name, Tensor::zeros(decl.type));
      continue;
    }
    if (it == ckpt->tensors.end())
      throw Error(checkpoint_file(dir) + ": no tensor '" + decl.name + "' (" + std::string(value_kind_name(decl.kind)) +
                  " of the training step)");
    if (!(it->second.type() == decl.type))
      throw Error(checkpoint_file(dir) + ": tensor '" + decl.name + "' is " + type_str(it->second.type()) +
                  ", the training step needs " + type_str(decl.type));
    tensors.emplace(decl.name, it->second);
  }
  return tensors;
}

void check_step_counter(const std::map<std::string, Tensor>& tensors, int64_t step, int64_t steps_asked,
                        const std::string& dir) {
  const int64_t counter = tensors.at(kStepState).i32()();
  if (counter != step)
    throw Error(checkpoint_file(dir) + ": corrupt checkpoint: its trainer state is at step " + std::to_string(step) +
                ", its step counter '" + kStepState + "' at " + std::to_string(counter));
  if (step + std::max<int64_t>(steps_asked, 1) > kLastStep) {
    std::string msg = "cannot train ";
    if (steps_asked > 0) msg += std::to_string(steps_asked) + " more steps ";
    msg += "from step " + std::to_string(step);
    msg += ": the step counter is an i32 and would wrap past " + std::to_string(kLastStep);
    throw Error(msg);
  }
}

}  // namespace kiln::models
