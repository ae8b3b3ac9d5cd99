#include "models/train/checkpoint_keeper.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/atomic_file.h"
#include "models/best_checkpoints.h"
#include "models/checkpoint.h"
#include "models/checkpoint_average.h"
#include "models/tasks/text_task.h"
#include "models/run/loss_curve_svg.h"

namespace kiln::models {
namespace {

namespace fs = std::filesystem;

// The bytes of the regular files under `path`.
uintmax_t bytes_under(const fs::path& path) {
  uintmax_t bytes = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(path, ec))
    if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  return bytes;
}

std::string megabytes_text(uintmax_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

std::vector<CurveSeries> loss_curves(const TrainerState& s) {
  std::vector<CurveSeries> curves(3);
  curves[0].label = "train";
  for (const EvalPoint& p : s.train_losses) curves[0].points.emplace_back(p.step, p.loss);
  curves[1].label = "dev";
  for (const EvalPoint& p : s.dev_losses) curves[1].points.emplace_back(p.step, p.loss);
  curves[2] = {"dev BLEU (greedy)", {}, true};
  for (const EvalPoint& p : s.dev_bleu) curves[2].points.emplace_back(p.step, p.loss);
  return curves;
}

}  // namespace

CheckpointKeeper::CheckpointKeeper(std::string dir, std::string task, TransformerConfig config, int64_t keep_snapshots,
                                   int64_t keep_best)
    : dir_(std::move(dir)),
      task_(std::move(task)),
      config_(std::move(config)),
      keep_snapshots_(keep_snapshots),
      keep_best_(keep_best) {}

void CheckpointKeeper::save(TrainerState& state, double train_seconds,
                            const std::map<std::string, Tensor>& tensors) const {
  state.train_seconds = train_seconds;
  const Checkpoint ckpt{task_, config_, tensors, trainer_state_to_json(state), "transformer", {}};
  save_checkpoint(dir_, ckpt);
  if (keep_snapshots_ > 0) {
    const std::string snapshot = snapshot_dir(dir_, state.step);
    save_checkpoint(snapshot, params_only(ckpt), task_files(dir_, snapshot));
    prune_snapshots(dir_, keep_snapshots_);
  }
  write_file_atomically(
      (fs::path(dir_) / "loss_curve.svg").string(),
      loss_curve_svg(task_ + " " + config_.name + ": loss per target token", loss_curves(state), "dev BLEU"));
}

void CheckpointKeeper::keep_evaluation(TrainerState& state, double train_seconds,
                                       const std::map<std::string, Tensor>& tensors, double score, bool is_best) const {
  if (!is_best && keep_best_ <= 1) return;
  state.train_seconds = train_seconds;
  keep_if_best(dir_, {task_, config_, tensors, trainer_state_to_json(state), "transformer", {}}, state.step, state.best_metric, score,
               is_best, keep_best_);
}

void CheckpointKeeper::write_settings(const nlohmann::ordered_json& settings, const std::string& recipe_why,
                                      int64_t step) const {
  std::string toml = "# kiln train's effective settings at step " + std::to_string(step) +
                     " (kiln train --config-file FILE reads them; flags given on the command line win)\n# " +
                     recipe_why + "\n";
  for (const auto& [key, value] : settings.items()) toml += key + " = " + value.dump() + "\n";
  write_file_atomically((fs::path(dir_) / "settings.toml").string(), toml);
}

std::string CheckpointKeeper::kept_text() const {
  const fs::path best = fs::path(dir_) / "best-snapshots";
  size_t bests = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(best, ec)) bests += e.is_directory();
  return "kept " + std::to_string(snapshots(dir_).size()) + " snapshots (" + (fs::path(dir_) / "snapshots").string() +
         ", params only: " + megabytes_text(bytes_under(fs::path(dir_) / "snapshots")) + ") and " +
         std::to_string(bests) + " best (" + best.string() + ": " + megabytes_text(bytes_under(best)) +
         ") for kiln average --last N / --best N; " + dir_ + " holds " + megabytes_text(bytes_under(dir_));
}

nlohmann::ordered_json run_settings(const TrainOptions& o, const EvalCadence& cadence, const std::string& task,
                                    const TransformerConfig& c, const TrainerState& s) {
  nlohmann::ordered_json j = {{"task", task},
                              {"checkpoint", o.checkpoint_dir},
                              {"config", c.name.substr(0, c.name.find('+'))},
                              {"d-model", c.d_model},
                              {"heads", c.heads},
                              {"d-ff", c.d_ff},
                              {"layers", c.enc_layers},
                              {"dropout", c.dropout},
                              {"label-smoothing", c.label_smoothing},
                              {"seed", s.seed},
                              {"batch-tokens", s.batch_tokens},
                              {"warmup", s.warmup},
                              {"lr-factor", s.lr_factor},
                              {"update-freq", s.update_freq},
                              {"best-metric", s.best_metric},
                              {"keep-best", o.keep_best},
                              {"backend", o.exec.backend}};
  if (o.minutes > 0) j["minutes"] = o.minutes;
  if (o.steps > 0) j["steps"] = o.steps;
  if (s.max_train_len > 0) j["max-train-len"] = s.max_train_len;
  if (o.patience > 0) j["patience"] = o.patience;  // 0 (never stop early) is the default, not a value
  if (cadence.eval_every > 0) j["eval-every"] = cadence.eval_every;
  if (cadence.eval_minutes > 0) j["eval-minutes"] = cadence.eval_minutes;
  if (cadence.save_every > 0) j["save-every"] = cadence.save_every;
  j["keep-snapshots"] = o.keep_snapshots;  // 0 too: a continued run keeps it, not the default
  j["eval-sentences"] = o.eval_sentences;
  if (task == kTextTask && !o.text.train.empty()) {
    const TextTaskOptions& t = o.text;
    j["train"] = t.train;
    j["valid"] = t.valid;
    if (!t.test.empty()) j["test"] = t.test;
    j["src-lang"] = t.src_lang;
    j["tgt-lang"] = t.tgt_lang;
    j["vocab-size"] = t.vocab_size;
    j["vocab"] = t.separate_vocab ? "separate" : "joint";
    if (!t.spm_model.empty()) j["spm-model"] = t.spm_model;
    if (t.max_len > 0) j["max-len"] = t.max_len;
    j["max-line-bytes"] = t.limits.max_line_bytes;
    j["max-ratio"] = t.limits.max_ratio;
    if (!o.prepared_dir.empty()) j["prepared"] = o.prepared_dir;
  }
  return j;
}

}  // namespace kiln::models
