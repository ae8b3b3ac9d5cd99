#include "models/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

#include "engine/atomic_file.h"
#include "engine/fnv1a.h"
#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "engine/param_init.h"
#include "engine/run_dir_lock.h"
#include "engine/tensor/collectives.h"
#include "models/checkpoint.h"
#include "models/best_checkpoints.h"
#include "models/checkpoint_average.h"
#include "models/optimizer.h"
#include "models/decode/decoder.h"
#include "models/train/eval_cadence.h"
#include "models/train/evaluate.h"
#include "models/train/executable_cache.h"
#include "models/train/loss_curve_svg.h"
#include "models/train/progress.h"
#include "models/train/recipe.h"
#include "models/train/resume_settings.h"
#include "models/train/run_log.h"
#include "models/train/task_setup.h"
#include "models/train/trainer_state.h"
#include "models/train/update_parts.h"
#include "models/tasks/text_task.h"
#include "models/transformer/transformer.h"

namespace kiln::models {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void check_options(const TrainOptions& o) {
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

// The given preset, else the checkpoint's config on resume, else the recipe's
// preset and regularization; then the options' overrides.
TransformerConfig model_config(const TrainOptions& o, const Recipe& recipe, const std::optional<Checkpoint>& ckpt,
                               const Task& task) {
  if (ckpt) check_same_model(o, ckpt->config, o.checkpoint_dir);
  TransformerConfig c = !o.config.empty() ? preset_config(o.config) : ckpt ? ckpt->config : preset_config(recipe.config);
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

// Every param and state of the training graph: from the checkpoint, or
// initialized.
std::map<std::string, Tensor> initial_tensors(const Graph& train_graph, uint64_t seed,
                                              const std::optional<Checkpoint>& ckpt, const std::string& dir) {
  std::map<std::string, Tensor> tensors;
  for (Value v : train_graph.declarations()) {
    const ValueInfo& decl = train_graph.value(v);
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

// The step counter %step is an i32[]: the trainer's step must match it, and no
// step may take it past INT32_MAX, where it would wrap and be saved wrapped.
constexpr int64_t kLastStep = std::numeric_limits<int32_t>::max();

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

// A short printable digest of bytes, for the ranks' start-up checks.
std::string digest_text(std::string_view bytes) {
  char text[24];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(fnv1a_64(bytes)));
  return text;
}

std::string batch_digest(const Batch& b) {
  std::string bytes;
  for (const Tensor* t : {&b.src, &b.tgt_in, &b.tgt_out})
    bytes.append(static_cast<const char*>(t->data()), t->nbytes());
  return digest_text(bytes);
}

// The kiln binary is read whole to compare the ranks' (tens of MB).
constexpr size_t kMaxBinaryBytes = size_t{1} << 30;

BatchShape shape_of(const Batch& b) { return {b.src.shape().at(0), b.src.shape().at(1), b.tgt_in.shape().at(1)}; }

bool fits_max_train_len(const BatchShape& s, int64_t max_len) {
  return max_len <= 0 || (s.src_len <= max_len && s.tgt_len <= max_len);
}

std::string percent(double share) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * share);
  return buf;
}

// The bytes of the regular files under `path`.
uintmax_t disk_use(const fs::path& path) {
  uintmax_t bytes = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(path, ec))
    if (e.is_regular_file(ec)) bytes += e.file_size(ec);
  return bytes;
}

std::string megabytes(uintmax_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MB", static_cast<double>(bytes) / 1e6);
  return text;
}

// What the run keeps for `kiln average` and on disk in all, e.g. "kept 5
// snapshots (DIR/snapshots, params only: 61.2 MB) and 3 best (DIR/best-snapshots:
// 36.7 MB) for kiln average --last N / --best N; DIR holds 160.3 MB".
std::string kept_text(const std::string& dir) {
  const fs::path best = fs::path(dir) / "best-snapshots";
  size_t bests = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(best, ec)) bests += e.is_directory();
  return "kept " + std::to_string(snapshots(dir).size()) + " snapshots (" + (fs::path(dir) / "snapshots").string() +
         ", params only: " + megabytes(disk_use(fs::path(dir) / "snapshots")) + ") and " + std::to_string(bests) +
         " best (" + best.string() + ": " + megabytes(disk_use(best)) +
         ") for kiln average --last N / --best N; " + dir + " holds " + megabytes(disk_use(dir));
}

class Trainer {
 public:
  explicit Trainer(const TrainOptions& o);
  TrainResult run();

 private:
  // Wall-clock seconds of this call spent training (compiles included; dev
  // evaluations and checkpoint writes are not).
  double training_seconds() const { return seconds_since(start_) - paused_seconds_; }
  // The training time of the whole run: the checkpoint's and this call's.
  double run_seconds() const { return resumed_seconds_ + training_seconds(); }
  // Whole --eval-minutes periods in `seconds` of training (0 without --eval-minutes).
  double eval_periods(double seconds) const {
    return cadence_.eval_minutes > 0 ? std::floor(seconds / 60 / cadence_.eval_minutes) : 0;
  }
  void prepare_text_task(const TrainOptions& o, const std::optional<Checkpoint>& ckpt);
  bool budget_left() const;
  // A resume of a run that has already trained its --minutes: what run() says
  // instead of training (every rank reads the same checkpoint, so all agree).
  TrainResult nothing_to_train();
  double eta() const;
  // The plan of epoch state_.epoch: batches of an update's tokens (batch_tokens x parts).
  std::unique_ptr<TrainEpoch> current_epoch() const {
    return task_->train_epoch(state_.seed, state_.epoch, state_.batch_tokens * state_.parts);
  }
  const Batch& next_batch();  // the stream's next batch (an update's), moving to the next epoch as needed
  // What rank 0 decides after a step, for every rank: its clock says when the
  // job evaluates, saves and stops.
  struct Decision {
    bool evaluate = false, save = false, stop = false;
  };
  // One update on this rank's parts of `whole` (update_parts.h): the job's loss
  // and rank 0's decision, summed over the ranks.
  Decision step(const Batch& whole);
  Decision decide();  // rank 0's, after a step
  void start_together();  // ranks > 1: the start-up checks and rank 0's tensors to every rank
  bool patience_ran_out();
  bool share_from_rank0(bool flag);
  void evaluate();  // pauses the training clock
  // Logs each compile: the first batch of a new shape waits for the JIT.
  ExecutableCache::CompileObserver compile_logger() {
    return [this](const std::string& graph, const BatchShape& shape, double seconds) {
      char text[32];
      std::snprintf(text, sizeof text, "%.1fs", seconds);
      progress_.message("compiled @" + graph + " for " + shape.str() + " in " + text);
    };
  }
  void save();  // pauses the training clock
  // Keeps the checkpoint as DIR/best (and among the best kept) when this
  // evaluation's metric beats the best so far; counts evaluations for --patience.
  void keep_best(double loss, double bleu, double chrf, double minutes);
  // Every setting the run trains with, resolved (recipe, checkpoint, flags), by flag name.
  nlohmann::ordered_json settings() const;
  void write_settings();
  // --profile: turns profiling on for `exe`'s second run and off after profile_runs.
  void profile_step(Executable& exe, const BatchShape& shape);
  // --profile: calls opts_.profile with the step that ran the most profiled runs.
  void report_profile() const;

  const TrainOptions& opts_;
  const EvalCadence cadence_;  // the options' or the budget's (eval_cadence.h)
  std::optional<RunDirLock> dir_lock_;  // rank 0's, for the run
  const int rank_, ranks_;  // this process's rank of the job, and how many there are (1: no MPI)
  std::ostream& log_;
  std::unique_ptr<Task> task_;
  ChosenRecipe recipe_;
  TransformerConfig config_;
  TrainerState state_;
  std::optional<ExecutableCache> steps_, losses_;
  std::optional<Decoder> decoder_;
  ProgressLine progress_;
  std::optional<RunLog> run_log_;
  TrainResult result_;
  std::unique_ptr<TrainEpoch> batches_;  // the current epoch's
  Batch batch_;                          // the one being trained on
  struct Profiled {
    BatchShape shape;
    int64_t runs = 0;  // of the step, profiled or not
  };
  std::map<const compiler::JitExecutable*, Profiled> profiled_;
  Clock::time_point start_;
  double paused_seconds_ = 0;    // this call's evaluations and saves
  double resumed_seconds_ = 0;   // the checkpoint's training seconds before this call
  bool budget_spent_ = false;    // a resume whose --minutes the checkpoint has already trained
  double evaluated_periods_ = 0;  // eval_periods() at the last --eval-minutes evaluation, or at the resume
  int64_t steps_done_ = 0, tokens_ = 0, window_tokens_ = 0;  // window: since the last logged line
  double step_seconds_ = 0, window_seconds_ = 0;             // time in the training step itself
};

// Where rank `r`'s lines go: rank 0 logs for the job, the others stay quiet.
std::ostream& log_of(const TrainOptions& o, int rank) {
  static std::ostream quiet(nullptr);  // no buffer: every write is dropped
  if (rank != 0) return quiet;
  return o.log ? *o.log : std::cerr;
}

Trainer::Trainer(const TrainOptions& o)
    : opts_(o),
      cadence_(eval_cadence({o.eval_every, o.eval_minutes, o.save_every}, o.minutes, o.steps)),
      rank_(collectives().rank()),
      ranks_(collectives().size()),
      log_(log_of(o, rank_)),
      progress_(log_, !o.log && rank_ == 0 && isatty(STDERR_FILENO), o.log_every) {
  check_options(o);
  const std::string& dir = o.checkpoint_dir;
  // A directory that holds a run continues it (fairseq's and Marian's habit):
  // running the command again finishes an interrupted run.
  const bool resume = fs::exists(checkpoint_file(dir));
  if (o.resume && !resume) throw Error("--resume: " + checkpoint_file(dir) + " does not exist");
  // Rank 0 writes DIR: no other kiln command may write it meanwhile (engine/run_dir_lock.h).
  if (rank_ == 0) dir_lock_.emplace(dir, "--checkpoint");
  std::optional<Checkpoint> ckpt;
  if (resume) {
    ckpt = load_checkpoint(dir);
    if (ckpt->task != o.task) throw Error(changed_setting_message("--task", o.task, ckpt->task, dir));
  }
  // Rank 0 alone writes: the directory, the prepared corpus, the task's files
  // (de-en learns its subword model when its data first loads: model_config's
  // vocab_size); the others then read what it wrote.
  if (rank_ == 0) {
    std::error_code ec;
    fs::create_directories(dir, ec);  // the task may keep files there (de-en: spm.model)
    if (ec) throw Error("--checkpoint " + dir + ": " + ec.message());
    if (o.task == kTextTask) prepare_text_task(o, ckpt);
    task_ = make_task(o.task, dir, o.data_dir, !resume);
  }
  collectives().barrier();
  if (rank_ != 0) task_ = make_task(o.task, dir, o.data_dir, false);
  // The recipe fits the task's corpus (text) and the budget; a resumed run keeps
  // its checkpoint's settings, so it is printed for a new run only.
  recipe_ = choose_recipe(*task_, o.minutes, o.steps);
  config_ = model_config(o, recipe_.recipe, ckpt, *task_);
  if (ckpt) recipe_.why = "a continued run keeps the settings it started with";
  else progress_.message(recipe_.why + "; flags given win");
  if (ckpt) check_matches(*ckpt, config_);
  state_ = initial_state(o, recipe_.recipe, ckpt, ranks_);

  AdamOptions adam;
  adam.factor = state_.lr_factor;
  adam.warmup = state_.warmup;
  adam.d_model = config_.d_model;
  adam.update_freq = state_.update_freq;
  adam.allreduce = ranks_ > 1;
  const TransformerConfig cfg = config_;
  steps_.emplace(
      [cfg, adam](const BatchShape& s) {
        return s.accumulate ? build_accumulate_graph(cfg, s.batch, s.src_len, s.tgt_len)
                            : build_train_graph(cfg, s.batch, s.src_len, s.tgt_len, adam);
      },
      o.exec, compile_logger());
  losses_.emplace([cfg](const BatchShape& s) { return build_loss_graph(cfg, s.batch, s.src_len, s.tgt_len, false); },
                  o.exec, compile_logger());
  steps_->set_persistent(initial_tensors(build_train_graph(cfg, 1, 1, 1, adam), state_.seed, ckpt, dir));
  check_step_counter(steps_->persistent(), state_.step, o.steps, dir);
  if (ranks_ > 1) start_together();
  result_.train_losses = state_.train_losses;
  result_.dev_losses = state_.dev_losses;
  resumed_seconds_ = state_.train_seconds;
  evaluated_periods_ = eval_periods(resumed_seconds_);
  // A spent budget trains nothing and writes nothing: not the log, not the settings.
  // (In minutes, as TrainResult::train_minutes reports the time: a resume with
  // --minutes of that value has nothing left to train.)
  budget_spent_ = ckpt && o.minutes > 0 && resumed_seconds_ / 60 >= o.minutes;
  if (rank_ == 0 && !budget_spent_) {
    run_log_.emplace(dir, state_.step);
    write_settings();
  }
}

// The ranks of a job must train one model on one stream of batches: the same
// settings, binary and data, checked before the first step, and the same
// params and optimizer state, which rank 0 sends to the others (a checkpoint
// resumed, or initialized from the seed).
void Trainer::start_together() {
  check_ranks_agree("the training settings (flags, recipe and checkpoint resolved)",
                    digest_text(settings().dump()));
  check_ranks_agree("the kiln binary (its bytes)", digest_text(read_file("/proc/self/exe", kMaxBinaryBytes, "kiln binary")));
  batches_ = current_epoch();
  check_ranks_agree("the task's data (vocabulary and the epoch's first batch)",
                    std::to_string(task_->vocab_size()) + " words, " + std::to_string(batches_->size()) +
                        " batches, the first " + (batches_->size() ? batch_digest(batches_->batch(0)) : "none"));
  std::map<std::string, Tensor> tensors = steps_->persistent();
  for (auto& [name, t] : tensors) collectives().broadcast(t.data(), static_cast<int64_t>(t.nbytes()));
  steps_->set_persistent(std::move(tensors));
}

// A new run prepares its corpus (or finds it prepared); a resumed run trains on the
// corpus its checkpoint names, and refuses other files or settings if given again.
void Trainer::prepare_text_task(const TrainOptions& o, const std::optional<Checkpoint>& ckpt) {
  if (!ckpt && o.text.train.empty()) {
    use_prepared_corpus(o.prepared_dir, o.checkpoint_dir);
    return;
  }
  if (!ckpt) {
    prepare_text_corpus(o.text, o.prepared_dir.empty() ? (fs::path(o.checkpoint_dir) / "data").string() : o.prepared_dir,
                        o.checkpoint_dir, log_);
    return;
  }
  if (o.text.train.empty()) return;
  const std::string path = (fs::path(o.checkpoint_dir) / "corpus.json").string();
  const TextCorpusInfo info = text_corpus_info_from_json(read_file(path, kMiB, "corpus.json"), path);
  if (info.fingerprint != text_corpus_fingerprint(o.text))
    throw Error("--resume: the corpus files or their settings differ from those " + o.checkpoint_dir +
                " was trained on (leave out --train, --valid and the rest to continue on its prepared corpus)");
}

// --minutes is the whole run's training time (a resume continues until the run
// has trained that long); --steps counts this call's steps.
bool Trainer::budget_left() const {
  return opts_.steps > 0 ? steps_done_ < opts_.steps : run_seconds() < opts_.minutes * 60;
}

// For --minutes what is left of the run's budget; for --steps the remaining
// steps at the mean time of a step so far (compiles and evaluations not included).
double Trainer::eta() const {
  if (opts_.minutes > 0) return opts_.minutes * 60 - run_seconds();
  return step_seconds_ / static_cast<double>(steps_done_) * static_cast<double>(opts_.steps - steps_done_);
}

const Batch& Trainer::next_batch() {
  for (int64_t epochs = 0; epochs < 2;) {
    if (static_cast<size_t>(state_.position) >= batches_->size()) {
      ++state_.epoch;
      ++epochs;
      state_.position = 0;
      batches_ = current_epoch();
    }
    while (static_cast<size_t>(state_.position) < batches_->size()) {
      batch_ = batches_->batch(static_cast<size_t>(state_.position++));
      if (fits_max_train_len(shape_of(batch_), state_.max_train_len)) return batch_;
    }
  }
  throw Error(
      "task " + task_->name() + " has no training batches" +
      (state_.max_train_len > 0 ? " of length <= --max-train-len " + std::to_string(state_.max_train_len) : ""));
}

// One update: this rank's parts of the update's batch, each weighted by its
// share of the batch's target tokens; the last one's graph applies Adam (after
// summing the ranks' gradients, with more than one rank).
Trainer::Decision Trainer::step(const Batch& whole) {
  if (state_.step >= kLastStep)  // --minutes can get here
    throw Error("stopping at step " + std::to_string(state_.step) + ": the step counter is an i32 and would wrap; " +
                opts_.checkpoint_dir + " keeps its last checkpoint");
  const int64_t update_tokens = whole.tgt_tokens;
  const std::string step_number = std::to_string(state_.step + 1);
  // A diverged step commits nothing that is saved: the run stops before the next checkpoint.
  const auto diverged = [&](const std::string& what) {
    progress_.message("warning: " + what + " at step " + step_number + "; not saving, " + opts_.checkpoint_dir +
                      " keeps its last checkpoint");
    return Error("training diverged at step " + step_number + ": " + what);
  };
  const bool cut = state_.parts > 1;
  const std::vector<UpdatePart> parts =
      cut ? cut_update(whole, state_.parts, rank_ * state_.update_freq, state_.update_freq, task_->pad_id(),
                       task_->bos_id())
          : std::vector<UpdatePart>{{whole, 0, 1.0}};
  double seconds = 0, loss = 0, lr = 0;
  int64_t tokens = 0;  // this rank's
  for (size_t i = 0; i < parts.size(); ++i) {
    const Batch& batch = parts[i].batch;
    BatchShape shape = shape_of(batch);
    shape.accumulate = i + 1 < parts.size();
    Executable& exe = steps_->get(shape);  // compiles a new shape: not timed
    if (opts_.profile) profile_step(exe, shape);
    const Clock::time_point start = Clock::now();
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
      if (!opts_.exec.check_numerics) throw;
      throw diverged(e.what());  // the first kernel that made a nan or inf, before the step's updates commit
    }
    seconds += seconds_since(start);
    loss += parts[i].weight * exe.output("loss").f32()();
    tokens += batch.tgt_tokens;
    if (!shape.accumulate) lr = exe.output("lr").f32()();
  }
  ++state_.step;
  ++steps_done_;
  step_seconds_ += seconds;
  window_seconds_ += seconds;
  Decision d = rank_ == 0 ? decide() : Decision{};
  if (ranks_ > 1) {
    // The job's loss, its target tokens (which must add up to the batch's: the
    // ranks read the same data) and rank 0's decision, in one sum.
    std::array<float, 5> sums = {static_cast<float>(loss), static_cast<float>(tokens), d.evaluate ? 1.0f : 0.0f,
                                 d.save ? 1.0f : 0.0f, d.stop ? 1.0f : 0.0f};
    collectives().allreduce(sums.data(), static_cast<int64_t>(sums.size()), DType::f32);
    loss = sums[0];
    if (static_cast<int64_t>(sums[1]) != update_tokens)
      throw Error("the ranks disagree on the data: step " + std::to_string(state_.step) + "'s batch has " +
                  std::to_string(update_tokens) + " target tokens here, the ranks' parts " +
                  std::to_string(static_cast<int64_t>(sums[1])));
    d = {sums[2] > 0, sums[3] > 0, sums[4] > 0};
  }
  if (!std::isfinite(loss))
    throw diverged("the loss is " + std::to_string(loss) +
                   " (--check-numerics names the first kernel that makes a nan or inf)");
  state_.train_losses.push_back({state_.step, loss});
  tokens_ += update_tokens;
  window_tokens_ += update_tokens;
  progress_.update({state_.step, loss, static_cast<double>(window_tokens_) / std::max(window_seconds_, 1e-9), lr, eta()});
  if (rank_ == 0 && state_.step % std::max<int64_t>(opts_.log_every, 1) == 0) {
    nlohmann::ordered_json line = {{"event", "train"},
                                   {"step", state_.step},
                                   {"loss", loss},
                                   {"lr", lr},
                                   {"tokens_per_second", static_cast<double>(window_tokens_) / std::max(window_seconds_, 1e-9)},
                                   {"minutes", run_seconds() / 60}};
    run_log_->write(line.dump());
    window_tokens_ = 0, window_seconds_ = 0;
  }
  return d;
}

// Every --eval-minutes of training time, counted over the whole run (resumes
// included), or every --eval-every / --save-every steps; the budget.
Trainer::Decision Trainer::decide() {
  const double periods = eval_periods(run_seconds());
  const bool minutes_point = periods > evaluated_periods_;
  evaluated_periods_ = periods;
  Decision d;
  d.evaluate = minutes_point || (cadence_.eval_every > 0 && state_.step % cadence_.eval_every == 0);
  d.save = minutes_point || (cadence_.save_every > 0 && state_.step % cadence_.save_every == 0);
  d.stop = !budget_left();
  return d;
}

TrainResult Trainer::run() {
  if (budget_spent_) return nothing_to_train();
  start_ = Clock::now();
  log_ << "training " << task_->name() << " with " << config_to_json(config_) << " from step " << state_.step << " on "
       << opts_.exec.backend;
  if (ranks_ > 1) log_ << " on " << ranks_ << " ranks";
  log_ << '\n';
  if (!batches_) batches_ = current_epoch();
  result_.first_step = state_.step + 1;
  // Every rank holds the checkpoint's evals_since_best at the start; after
  // that only rank 0 evaluates, and tells the others when patience runs out.
  bool stop = patience_ran_out();
  bool evaluated_last = stop;  // a run that stops early has just evaluated
  bool saved_last = false;
  while (!stop) {
    const Decision d = step(next_batch());
    evaluated_last = d.evaluate;
    saved_last = d.save;
    if (rank_ == 0) {
      if (d.evaluate) evaluate();
      if (d.save) save();
    }
    stop = d.stop;
    if (d.evaluate || d.save) stop = share_from_rank0(rank_ == 0 && patience_ran_out()) || stop;
  }
  if (rank_ == 0) {
    if (!evaluated_last) evaluate();
    if (!saved_last) save();
    progress_.message(kept_text(opts_.checkpoint_dir));
    if (opts_.profile) report_profile();
  }
  collectives().barrier();  // the others wait (asleep) for rank 0's last evaluation and save
  result_.last_step = state_.step;
  result_.train_losses = state_.train_losses;
  result_.dev_losses = state_.dev_losses;
  result_.best_step = state_.best_step;
  result_.best_score = state_.best_score;
  result_.tokens_per_second = static_cast<double>(tokens_) / std::max(step_seconds_, 1e-9);
  result_.train_minutes = state_.train_seconds / 60;
  return result_;
}

// --patience: whether the last evaluations in a row did not beat the best
// (rank 0 logs why).
bool Trainer::patience_ran_out() {
  if (opts_.patience <= 0 || state_.evals_since_best < opts_.patience) return false;
  result_.stopped_early = true;
  const std::string why = std::to_string(state_.evals_since_best) + " dev evaluations without a better " +
                          state_.best_metric + " than step " + std::to_string(state_.best_step) + "'s";
  progress_.message("stopping early: " + why + " (--patience " + std::to_string(opts_.patience) + ")");
  if (run_log_) run_log_->write(nlohmann::ordered_json{{"event", "stop"}, {"step", state_.step}, {"reason", why}}.dump());
  return true;
}

TrainResult Trainer::nothing_to_train() {
  char text[256];
  std::snprintf(text, sizeof text,
                "nothing to train: the run has trained %.2f min of its --minutes %g; nothing written (a larger "
                "--minutes continues it)",
                resumed_seconds_ / 60, opts_.minutes);
  progress_.message(text);
  result_.budget_spent = true;
  result_.first_step = state_.step + 1;
  result_.last_step = state_.step;
  result_.best_step = state_.best_step;
  result_.best_score = state_.best_score;
  result_.train_minutes = resumed_seconds_ / 60;
  return result_;
}

// Rank 0's flag on every rank (the others wait for it asleep, as rank 0
// evaluates or saves).
bool Trainer::share_from_rank0(bool flag) {
  if (ranks_ == 1) return flag;
  int32_t value = flag ? 1 : 0;
  collectives().broadcast(&value, sizeof value);
  return value != 0;
}

void Trainer::profile_step(Executable& exe, const BatchShape& shape) {
  auto* jit = dynamic_cast<compiler::JitExecutable*>(&exe);
  if (!jit) return;
  Profiled& p = profiled_[jit];
  p.shape = shape;
  if (p.runs == 1) jit->profile(true);  // the first run warmed it up
  if (p.runs == 1 + opts_.profile_runs) jit->profile(false);
  ++p.runs;
}

void Trainer::report_profile() const {
  std::vector<ProfiledStep> steps;
  for (const auto& [jit, p] : profiled_)
    if (jit->run_profile().runs > 0) steps.push_back({jit, p.shape.str(), p.runs});
  if (steps.empty())
    throw Error("--profile: no step was profiled (each batch shape's first run is its warm-up; train longer)");
  std::stable_sort(steps.begin(), steps.end(),
                   [](const ProfiledStep& a, const ProfiledStep& b) { return a.steps > b.steps; });
  opts_.profile(steps);
}

void Trainer::evaluate() {
  const Clock::time_point start = Clock::now();
  const double minutes = run_seconds() / 60;  // the training time evaluated, before this evaluation's own time
  const auto& params = steps_->persistent();
  losses_->set_persistent(params);
  const double loss = evaluate_loss(*task_, *losses_, Split::dev, state_.batch_tokens, state_.max_train_len);
  state_.dev_losses.push_back({state_.step, loss});
  if (decoder_)
    decoder_->set_params(params);
  else
    decoder_.emplace(config_, params, opts_.exec, compile_logger());
  const DecodeScores scores = evaluate_decoding(*task_, *decoder_, Split::dev, opts_.eval_sentences, {});
  result_.bleu = scores.bleu.score;
  result_.chrf = scores.chrf.score;
  result_.exact_match = scores.exact_match;
  state_.dev_bleu.push_back({state_.step, scores.bleu.score});
  state_.dev_chrf.push_back({state_.step, scores.chrf.score});
  char loss_text[32];
  std::snprintf(loss_text, sizeof loss_text, "%.4f", loss);
  char minutes_text[48];
  std::snprintf(minutes_text, sizeof minutes_text, " (%.1f min)", minutes);
  progress_.message("dev at step " + std::to_string(state_.step) + minutes_text + ": loss " + loss_text +
                    ", greedy on " + std::to_string(scores.hypotheses.size()) + " sentences: " +
                    bleu_str(scores.bleu) + ", " + chrf_str(scores.chrf) + ", exact match " +
                    percent(scores.exact_match));
  keep_best(loss, scores.bleu.score, scores.chrf.score, minutes);
  paused_seconds_ += seconds_since(start);
}

void Trainer::keep_best(double loss, double bleu, double chrf, double minutes) {
  const std::string& metric = state_.best_metric;
  const double score = metric == "loss" ? loss : metric == "bleu" ? bleu : chrf;
  const bool is_best = state_.best_step < 0 || better(metric, score, state_.best_score);
  if (is_best) {
    state_.best_step = state_.step;
    state_.best_score = score;
    state_.evals_since_best = 0;
  } else {
    ++state_.evals_since_best;
  }
  nlohmann::ordered_json line = {{"event", "dev"}, {"step", state_.step}, {"minutes", minutes},
                                 {"loss", loss},   {"bleu", bleu},        {"chrf", chrf},
                                 {"best", is_best}};
  run_log_->write(line.dump());
  if (!is_best && opts_.keep_best <= 1) return;
  state_.train_seconds = minutes * 60;
  keep_if_best(opts_.checkpoint_dir,
               {task_->name(), config_, steps_->persistent(), trainer_state_to_json(state_)}, state_.step, metric,
               score, is_best, opts_.keep_best);
  if (is_best) progress_.message("best " + metric + " so far: kept in " + best_dir(opts_.checkpoint_dir));
}

nlohmann::ordered_json Trainer::settings() const {
  const TransformerConfig& c = config_;
  nlohmann::ordered_json j = {{"task", task_->name()},
                              {"checkpoint", opts_.checkpoint_dir},
                              {"config", c.name.substr(0, c.name.find('+'))},
                              {"d-model", c.d_model},
                              {"heads", c.heads},
                              {"d-ff", c.d_ff},
                              {"layers", c.enc_layers},
                              {"dropout", c.dropout},
                              {"label-smoothing", c.label_smoothing},
                              {"seed", state_.seed},
                              {"batch-tokens", state_.batch_tokens},
                              {"warmup", state_.warmup},
                              {"lr-factor", state_.lr_factor},
                              {"update-freq", state_.update_freq},
                              {"best-metric", state_.best_metric},
                              {"keep-best", opts_.keep_best},
                              {"backend", opts_.exec.backend}};
  if (opts_.minutes > 0) j["minutes"] = opts_.minutes;
  if (opts_.steps > 0) j["steps"] = opts_.steps;
  if (state_.max_train_len > 0) j["max-train-len"] = state_.max_train_len;
  if (opts_.patience > 0) j["patience"] = opts_.patience;  // 0 (never stop early) is the default, not a value
  if (cadence_.eval_every > 0) j["eval-every"] = cadence_.eval_every;
  if (cadence_.eval_minutes > 0) j["eval-minutes"] = cadence_.eval_minutes;
  if (cadence_.save_every > 0) j["save-every"] = cadence_.save_every;
  j["keep-snapshots"] = opts_.keep_snapshots;  // 0 too: a continued run keeps it, not the default
  j["eval-sentences"] = opts_.eval_sentences;
  if (task_->name() == kTextTask && !opts_.text.train.empty()) {
    const TextTaskOptions& t = opts_.text;
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
    if (!opts_.prepared_dir.empty()) j["prepared"] = opts_.prepared_dir;
  }
  return j;
}

// DIR/settings.toml: the settings as `kiln train --config-file` reads them back
// (each key a flag), and a "start" line in the log.
void Trainer::write_settings() {
  const nlohmann::ordered_json j = settings();
  std::string toml = "# kiln train's effective settings at step " + std::to_string(state_.step) +
                     " (kiln train --config-file FILE reads them; flags given on the command line win)\n# " +
                     recipe_.why + "\n";
  for (const auto& [key, value] : j.items()) toml += key + " = " + value.dump() + "\n";
  write_file_atomically((fs::path(opts_.checkpoint_dir) / "settings.toml").string(), toml);
  run_log_->write(nlohmann::ordered_json{{"event", "start"}, {"step", state_.step}, {"settings", j}}.dump());
}

void Trainer::save() {
  const Clock::time_point start = Clock::now();
  state_.train_seconds = run_seconds();
  const std::string& dir = opts_.checkpoint_dir;
  const Checkpoint ckpt{task_->name(), config_, steps_->persistent(), trainer_state_to_json(state_)};
  save_checkpoint(dir, ckpt);
  if (opts_.keep_snapshots > 0) {
    const std::string snapshot = snapshot_dir(dir, state_.step);
    save_checkpoint(snapshot, params_only(ckpt), task_files(dir, snapshot));
    prune_snapshots(dir, opts_.keep_snapshots);
  }
  std::vector<CurveSeries> curves(3);
  curves[0].label = "train";
  for (const EvalPoint& p : state_.train_losses) curves[0].points.emplace_back(p.step, p.loss);
  curves[1].label = "dev";
  for (const EvalPoint& p : state_.dev_losses) curves[1].points.emplace_back(p.step, p.loss);
  curves[2] = {"dev BLEU (greedy)", {}, true};
  for (const EvalPoint& p : state_.dev_bleu) curves[2].points.emplace_back(p.step, p.loss);
  write_file_atomically((fs::path(dir) / "loss_curve.svg").string(),
                        loss_curve_svg(task_->name() + " " + config_.name + ": loss per target token", curves,
                                       "dev BLEU"));
  progress_.message("saved " + checkpoint_file(dir) + " at step " + std::to_string(state_.step));
  paused_seconds_ += seconds_since(start);
}

}  // namespace

TrainResult train(const TrainOptions& opts) { return Trainer(opts).run(); }

}  // namespace kiln::models
