#include "models/train/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "engine/ir/error.h"
#include "engine/run_dir_lock.h"
#include "engine/tensor/collectives.h"
#include "models/best_checkpoints.h"
#include "models/checkpoint.h"
#include "models/train/batch_stream.h"
#include "models/train/checkpoint_keeper.h"
#include "models/train/eval_cadence.h"
#include "models/train/evaluator.h"
#include "models/train/job_start.h"
#include "models/run/progress.h"
#include "models/train/recipe.h"
#include "models/train/resume_settings.h"
#include "models/run/run_log.h"
#include "models/train/run_start.h"
#include "models/train/step_runner.h"
#include "models/train/task_setup.h"
#include "models/run/train_clock.h"
#include "models/train/trainer_state.h"

namespace kiln::models {
namespace {

namespace fs = std::filesystem;

// Where rank `r`'s lines go: rank 0 logs for the job, the others stay quiet.
std::ostream& log_of(const TrainOptions& o, int rank) {
  static std::ostream quiet(nullptr);  // no buffer: every write is dropped
  if (rank != 0) return quiet;
  return o.log ? *o.log : std::cerr;
}

// The training loop: each step trains one update (step_runner.h) on the
// stream's next batch (batch_stream.h); after it, rank 0's clock decides
// whether the job evaluates (evaluator.h), saves (checkpoint_keeper.h) and
// stops. The constructor sets the run up (run_start.h).
class Trainer {
 public:
  explicit Trainer(const TrainOptions& o);
  TrainResult run();

 private:
  // Whole --eval-minutes periods in `seconds` of training (0 without --eval-minutes).
  double eval_periods(double seconds) const {
    return cadence_.eval_minutes > 0 ? std::floor(seconds / 60 / cadence_.eval_minutes) : 0;
  }
  bool budget_left() const;
  double eta() const;
  // One update on `whole`, an update's batch: logs the job's loss, returns rank 0's decision.
  StepDecision step(const Batch& whole);
  StepDecision decide();  // rank 0's, after a step
  void evaluate();        // pauses the training clock
  void save();            // pauses the training clock
  bool patience_ran_out();
  bool share_from_rank0(bool flag);
  // A resume of a run that has already trained its --minutes: what run() says
  // instead of training (every rank reads the same checkpoint, so all agree).
  TrainResult nothing_to_train();
  // Logs each compile: the first batch of a new shape waits for the JIT.
  ExecutableCache::CompileObserver compile_logger();

  const TrainOptions& opts_;
  const EvalCadence cadence_;           // the options' or the budget's (eval_cadence.h)
  std::optional<RunDirLock> dir_lock_;  // rank 0's, for the run
  const int rank_, ranks_;              // this process's rank of the job, and how many there are (1: no MPI)
  std::ostream& log_;
  std::unique_ptr<Task> task_;
  ChosenRecipe recipe_;
  TransformerConfig config_;
  TrainerState state_;
  std::optional<StepRunner> steps_;
  std::optional<Evaluator> evaluator_;
  std::optional<CheckpointKeeper> keeper_;
  std::optional<BatchStream> batches_;
  ProgressLine progress_;
  std::optional<RunLog> run_log_;
  TrainResult result_;
  TrainClock clock_;
  bool budget_spent_ = false;     // a resume whose --minutes the checkpoint has already trained
  double evaluated_periods_ = 0;  // eval_periods() at the last --eval-minutes evaluation, or at the resume
  int64_t steps_done_ = 0, tokens_ = 0, window_tokens_ = 0;  // window: since the last logged line
  double step_seconds_ = 0, window_seconds_ = 0;             // time in the training step itself
};

Trainer::Trainer(const TrainOptions& o)
    : opts_(o),
      cadence_(eval_cadence({o.eval_every, o.eval_minutes, o.save_every}, o.minutes, o.steps)),
      rank_(collectives().rank()),
      ranks_(collectives().size()),
      log_(log_of(o, rank_)),
      progress_(log_, !o.log && rank_ == 0 && isatty(STDERR_FILENO), o.log_every) {
  check_train_options(o);
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
    if (o.task == kTextTask) prepare_run_corpus(o.text, o.prepared_dir, dir, ckpt.has_value(), log_);
    task_ = make_task(o.task, dir, o.data_dir, !resume);
  }
  collectives().barrier();
  if (rank_ != 0) task_ = make_task(o.task, dir, o.data_dir, false);
  // The recipe fits the task's corpus (text) and the budget; a resumed run keeps
  // its checkpoint's settings, so it is printed for a new run only.
  recipe_ = choose_recipe(*task_, o.minutes, o.steps);
  config_ = model_config(o, recipe_.recipe, ckpt, *task_);
  if (ckpt)
    recipe_.why = "a continued run keeps the settings it started with";
  else
    progress_.message(recipe_.why + "; flags given win");
  if (ckpt) check_matches(*ckpt, config_);
  state_ = initial_state(o, recipe_.recipe, ckpt, ranks_);

  steps_.emplace(config_, state_, rank_, ranks_, o.exec, compile_logger(), task_->pad_id(), task_->bos_id(),
                 o.profile ? std::optional<int64_t>(o.profile_runs) : std::nullopt);
  evaluator_.emplace(*task_, config_, o.exec, compile_logger(), o.eval_sentences);
  keeper_.emplace(dir, task_->name(), config_, o.keep_snapshots, o.keep_best);
  batches_.emplace(*task_, state_);
  steps_->set_persistent(initial_tensors(steps_->step_graph(), state_.seed, ckpt, dir));
  check_step_counter(steps_->persistent(), state_.step, o.steps, dir);
  if (ranks_ > 1) {
    std::map<std::string, Tensor> tensors = steps_->persistent();
    start_ranks_together(run_settings(o, cadence_, task_->name(), config_, state_).dump(), *task_, *batches_, tensors);
    steps_->set_persistent(std::move(tensors));
  }
  result_.train_losses = state_.train_losses;
  result_.dev_losses = state_.dev_losses;
  clock_ = TrainClock(state_.train_seconds);
  evaluated_periods_ = eval_periods(clock_.resumed_seconds());
  // A spent budget trains nothing and writes nothing: not the log, not the settings.
  // (In minutes, as TrainResult::train_minutes reports the time: a resume with
  // --minutes of that value has nothing left to train.)
  budget_spent_ = ckpt && o.minutes > 0 && clock_.resumed_seconds() / 60 >= o.minutes;
  if (rank_ == 0 && !budget_spent_) {
    run_log_.emplace(dir, state_.step);
    const nlohmann::ordered_json settings = run_settings(o, cadence_, task_->name(), config_, state_);
    keeper_->write_settings(settings, recipe_.why, state_.step);
    run_log_->start(state_.step, settings);
  }
}

ExecutableCache::CompileObserver Trainer::compile_logger() {
  return [this](const std::string& graph, const BatchShape& shape, double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1fs", seconds);
    progress_.message("compiled @" + graph + " for " + shape.str() + " in " + text);
  };
}

// --minutes is the whole run's training time (a resume continues until the run
// has trained that long); --steps counts this call's steps.
bool Trainer::budget_left() const {
  return opts_.steps > 0 ? steps_done_ < opts_.steps : clock_.run_seconds() < opts_.minutes * 60;
}

// For --minutes what is left of the run's budget; for --steps the remaining
// steps at the mean time of a step so far (compiles and evaluations not included).
double Trainer::eta() const {
  if (opts_.minutes > 0) return opts_.minutes * 60 - clock_.run_seconds();
  return step_seconds_ / static_cast<double>(steps_done_) * static_cast<double>(opts_.steps - steps_done_);
}

StepDecision Trainer::step(const Batch& whole) {
  if (state_.step >= kLastStep)  // --minutes can get here
    throw Error("stopping at step " + std::to_string(state_.step) + ": the step counter is an i32 and would wrap; " +
                opts_.checkpoint_dir + " keeps its last checkpoint");
  try {
    const RankStep mine = steps_->run(whole, state_.step + 1);
    ++state_.step;
    ++steps_done_;
    step_seconds_ += mine.seconds;
    window_seconds_ += mine.seconds;
    const JobStep job = job_step(mine, rank_ == 0 ? decide() : StepDecision{}, whole.tgt_tokens, state_.step);
    state_.train_losses.push_back({state_.step, job.loss});
    tokens_ += whole.tgt_tokens;
    window_tokens_ += whole.tgt_tokens;
    const double tokens_per_second = static_cast<double>(window_tokens_) / std::max(window_seconds_, 1e-9);
    progress_.update({state_.step, job.loss, tokens_per_second, mine.lr, eta()});
    if (rank_ == 0 && state_.step % std::max<int64_t>(opts_.log_every, 1) == 0) {
      run_log_->train(state_.step, job.loss, mine.lr, tokens_per_second, clock_.run_seconds() / 60);
      window_tokens_ = 0, window_seconds_ = 0;
    }
    return job.decision;
  } catch (const DivergedStep& e) {  // nothing of it is saved: the run stops before the next checkpoint
    progress_.message("warning: " + e.cause + " at step " + std::to_string(e.step) + "; not saving, " +
                      opts_.checkpoint_dir + " keeps its last checkpoint");
    throw;
  }
}

// Every --eval-minutes of training time, counted over the whole run (resumes
// included), or every --eval-every / --save-every steps; the budget.
StepDecision Trainer::decide() {
  const double periods = eval_periods(clock_.run_seconds());
  const bool minutes_point = periods > evaluated_periods_;
  evaluated_periods_ = periods;
  StepDecision d;
  d.evaluate = minutes_point || (cadence_.eval_every > 0 && state_.step % cadence_.eval_every == 0);
  d.save = minutes_point || (cadence_.save_every > 0 && state_.step % cadence_.save_every == 0);
  d.stop = !budget_left();
  return d;
}

TrainResult Trainer::run() {
  if (budget_spent_) return nothing_to_train();
  clock_.start();
  log_ << "training " << task_->name() << " with " << config_to_json(config_) << " from step " << state_.step << " on "
       << opts_.exec.backend;
  if (ranks_ > 1) log_ << " on " << ranks_ << " ranks";
  log_ << '\n';
  result_.first_step = state_.step + 1;
  // Every rank holds the checkpoint's evals_since_best at the start; after
  // that only rank 0 evaluates, and tells the others when patience runs out.
  bool stop = patience_ran_out();
  bool evaluated_last = stop;  // a run that stops early has just evaluated
  bool saved_last = false;
  while (!stop) {
    const StepDecision d = step(batches_->next());
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
    progress_.message(keeper_->kept_text());
    if (opts_.profile) opts_.profile(steps_->profiled());
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
  if (run_log_) run_log_->stop(state_.step, why);
  return true;
}

TrainResult Trainer::nothing_to_train() {
  char text[256];
  std::snprintf(text, sizeof text,
                "nothing to train: the run has trained %.2f min of its --minutes %g; nothing written (a larger "
                "--minutes continues it)",
                clock_.resumed_seconds() / 60, opts_.minutes);
  progress_.message(text);
  result_.budget_spent = true;
  result_.first_step = state_.step + 1;
  result_.last_step = state_.step;
  result_.best_step = state_.best_step;
  result_.best_score = state_.best_score;
  result_.train_minutes = clock_.resumed_seconds() / 60;
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

void Trainer::evaluate() {
  const TrainClock::Pause pause(clock_);
  const double minutes = clock_.run_seconds() / 60;  // the training time evaluated, before this evaluation's own time
  const DevEvaluation dev = evaluator_->evaluate(steps_->persistent(), state_);
  result_.bleu = dev.decoding.bleu.score;
  result_.chrf = dev.decoding.chrf.score;
  result_.exact_match = dev.decoding.exact_match;
  progress_.message(dev_text(dev, minutes));
  run_log_->dev(state_.step, minutes, dev.loss, dev.decoding.bleu.score, dev.decoding.chrf.score, dev.is_best);
  keeper_->keep_evaluation(state_, minutes * 60, steps_->persistent(), dev.score, dev.is_best);
  if (dev.is_best)
    progress_.message("best " + state_.best_metric + " so far: kept in " + best_dir(opts_.checkpoint_dir));
}

void Trainer::save() {
  const TrainClock::Pause pause(clock_);
  keeper_->save(state_, clock_.run_seconds(), steps_->persistent());
  progress_.message("saved " + checkpoint_file(opts_.checkpoint_dir) + " at step " + std::to_string(state_.step));
}

}  // namespace

TrainResult train(const TrainOptions& opts) { return Trainer(opts).run(); }

}  // namespace kiln::models
