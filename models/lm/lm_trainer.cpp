#include "models/lm/lm_trainer.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/param_init.h"
#include "engine/run_dir_lock.h"
#include "models/checkpoint.h"
#include "models/lm/byte_corpus.h"
#include "models/lm/lm.h"
#include "models/lm/lm_checkpoint.h"
#include "models/lm/lm_eval.h"
#include "models/run/loss_curve_svg.h"
#include "models/run/progress.h"
#include "models/run/run_log.h"
#include "models/run/train_clock.h"

namespace kiln::models {
namespace {

namespace fs = std::filesystem;

const std::string kTask = "text";

// What shapes a run's trajectory, resolved from the options and the checkpoint.
struct RunSettings {
  LmConfig config;
  int64_t batch = 32;
  double lr = 1e-3;
  int64_t warmup = 100;
  uint64_t seed = 0;
};

template <class T>
std::string text_of(const T& v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// `given` into `value` on a new run; on a continued one, `given` must be the run's.
template <class T>
void settle(const std::optional<T>& given, T& value, const char* flag, bool continued, const std::string& dir) {
  if (!given) return;
  if (continued && *given != value)
    throw Error(std::string(flag) + " " + text_of(*given) + " differs from the run's " + text_of(value) + " in " + dir +
                ": a continued run keeps its model and trajectory (start a new run in another directory)");
  value = *given;
}

void settle_all(const LmSettings& g, RunSettings& r, bool continued, const std::string& dir) {
  LmConfig& c = r.config;
  settle(g.d_model, c.d_model, "--d-model", continued, dir);
  settle(g.heads, c.heads, "--heads", continued, dir);
  settle(g.d_ff, c.d_ff, "--d-ff", continued, dir);
  settle(g.layers, c.layers, "--layers", continued, dir);
  settle(g.context, c.context, "--context", continued, dir);
  settle(g.positions, c.positions, "--positions", continued, dir);
  settle(g.norm, c.norm, "--norm", continued, dir);
  settle(g.dropout, c.dropout, "--dropout", continued, dir);
  settle(g.batch, r.batch, "--batch-size", continued, dir);
  settle(g.lr, r.lr, "--lr", continued, dir);
  settle(g.warmup, r.warmup, "--warmup", continued, dir);
  settle(g.seed, r.seed, "--seed", continued, dir);
  // Rotary and sinusoidal positions can be placed past the trained window: the
  // tables cover four times it unless --positions-max says otherwise.
  if (!continued) c.max_len = g.max_len.value_or(c.positions == "learned" ? c.context : 4 * c.context);
  settle(g.max_len, c.max_len, "--positions-max", continued, dir);
  validate(c);
}

nlohmann::ordered_json state_json(const RunSettings& r, double train_seconds,
                                  const std::vector<std::pair<double, double>>& train_losses,
                                  const std::vector<LmEvalPoint>& dev) {
  nlohmann::ordered_json j{
      {"batch", r.batch}, {"lr", r.lr}, {"warmup", r.warmup}, {"seed", r.seed}, {"train_seconds", train_seconds}};
  j["train_losses"] = train_losses;
  nlohmann::ordered_json d = nlohmann::ordered_json::array();
  for (const LmEvalPoint& p : dev) d.push_back({p.step, p.minutes, p.loss});
  j["dev"] = d;
  return j;
}

// A continued run's checkpoint: its settings, training time and history.
struct Continued {
  Checkpoint ckpt;
  double train_seconds = 0;
  std::vector<std::pair<double, double>> train_losses;
  std::vector<LmEvalPoint> dev;
};

Continued read_run(const std::string& dir, RunSettings& r) {
  LmCheckpoint run = load_lm_checkpoint(dir);
  Continued c{std::move(run.ckpt), 0, {}, {}};
  r.config = run.config;
  const std::string origin = checkpoint_file(dir) + ": trainer state";
  try {
    const auto j = nlohmann::json::parse(c.ckpt.trainer_state);
    r.batch = j.at("batch").get<int64_t>();
    r.lr = j.at("lr").get<double>();
    r.warmup = j.at("warmup").get<int64_t>();
    r.seed = j.at("seed").get<uint64_t>();
    c.train_seconds = j.at("train_seconds").get<double>();
    c.train_losses = j.at("train_losses").get<std::vector<std::pair<double, double>>>();
    for (const auto& p : j.at("dev"))
      c.dev.push_back({p.at(0).get<int64_t>(), p.at(1).get<double>(), p.at(2).get<double>()});
  } catch (const nlohmann::json::exception& e) {
    throw Error(origin + ": " + e.what());
  }
  if (r.batch <= 0 || r.warmup <= 0 || !(r.lr > 0)) throw Error(origin + ": bad batch, lr or warm-up");
  return c;
}

// The dev loss of the training graph's current params.
double dev_loss(Executable& exe, const Executable& train, const DevBatches& dev) {
  for (Value v : exe.graph().declarations())
    if (const ValueInfo& d = exe.graph().value(v); d.kind == ValueKind::param) exe.bind(d.name, train.binding(d.name));
  return mean_lm_loss(exe, dev.batches);
}

Checkpoint checkpoint_of(const Executable& exe, const RunSettings& r, const nlohmann::ordered_json& state) {
  Checkpoint c;
  c.task = kTask;
  c.model = "lm";
  c.model_config = lm_config_to_json(r.config);
  c.trainer_state = state.dump();
  for (Value v : exe.graph().declarations()) {
    const ValueInfo& d = exe.graph().value(v);
    if (d.kind == ValueKind::param || d.kind == ValueKind::state) c.tensors.emplace(d.name, exe.binding(d.name));
  }
  return c;
}

void write_curve(const std::string& dir, const std::vector<std::pair<double, double>>& train,
                 const std::vector<LmEvalPoint>& dev) {
  CurveSeries t{"train", train, false}, d{"dev", {}, false};
  for (const LmEvalPoint& p : dev) d.points.emplace_back(static_cast<double>(p.step), p.loss);
  write_file_atomically((fs::path(dir) / "loss_curve.svg").string(),
                        loss_curve_svg("language model: loss (nats per byte) by step", {t, d}));
}

}  // namespace

LmTrainResult train_lm(const LmTrainOptions& o) {
  std::ostream& log = o.log ? *o.log : std::cerr;
  if ((o.minutes > 0) == (o.steps > 0)) throw Error("give exactly one budget: --minutes or --steps");
  const RunDirLock lock(o.checkpoint_dir, "--checkpoint");
  const bool continued = fs::exists(checkpoint_file(o.checkpoint_dir));
  RunSettings run;
  Continued past;
  if (continued) past = read_run(o.checkpoint_dir, run);
  settle_all(o.settings, run, continued, o.checkpoint_dir);
  const LmConfig& cfg = run.config;

  const ByteCorpus train = read_byte_corpus(o.train, cfg.context + 1);
  const ByteCorpus valid = read_byte_corpus(o.valid, cfg.context + 1);
  const DevBatches dev = dev_batches(valid, run.batch, cfg.context, o.dev_windows);

  AdamOptions adam;
  adam.d_model = cfg.d_model;
  adam.warmup = run.warmup;
  // The schedule's peak, factor * (d_model * warmup)^-0.5, is the --lr asked for.
  adam.factor = run.lr * std::sqrt(static_cast<double>(cfg.d_model * run.warmup));
  auto exe = compiler::make_executable(build_lm_train_graph(cfg, run.batch, cfg.context, adam), o.exec);
  for (const auto& [name, t] : past.ckpt.tensors) exe->bind(name, t);
  bind_initial_values(*exe, run.seed);
  std::unique_ptr<Executable> dev_exe;

  const int64_t first_step = exe->binding(kStepState).i32()();
  RunLog run_log(o.checkpoint_dir, first_step);
  nlohmann::ordered_json settings{
      {"model", "lm"},        {"config", nlohmann::ordered_json::parse(lm_config_to_json(cfg))},
      {"train", o.train},     {"valid", o.valid},
      {"batch", run.batch},   {"lr", run.lr},
      {"warmup", run.warmup}, {"seed", run.seed}};
  run_log.start(first_step, settings);
  log << (continued ? "continuing" : "training") << " a language model " << describe(cfg) << " on "
      << train.bytes.size() << " bytes of " << o.train << " (dev: " << dev.windows << " windows of " << cfg.context
      << " from " << o.valid << "), " << run.batch << " sequences a step, peak lr " << run.lr << " after " << run.warmup
      << " warm-up steps\n";

  TrainClock clock(past.train_seconds);
  const double budget_seconds = o.minutes * 60;
  const int64_t last_step = o.steps > 0 ? first_step + o.steps : -1;
  // When to evaluate and save: every eval_every steps or eval_minutes, else each fifth of the budget.
  const double eval_seconds = o.eval_minutes > 0                   ? o.eval_minutes * 60
                              : o.eval_every == 0 && o.minutes > 0 ? budget_seconds / 5
                                                                   : 0;
  const int64_t eval_steps = o.eval_every > 0                     ? o.eval_every
                             : o.eval_minutes == 0 && o.steps > 0 ? std::max<int64_t>(1, o.steps / 5)
                                                                  : 0;
  if (budget_seconds > 0 && clock.resumed_seconds() >= budget_seconds) {
    log << "the run in " << o.checkpoint_dir << " has trained its " << o.minutes << " minutes already\n";
    return {first_step, first_step, cfg, past.dev, 0, clock.resumed_seconds() / 60};
  }

  ProgressLine progress(log, !o.log && isatty(STDERR_FILENO), o.log_every);
  const auto tokens_per_step = static_cast<double>(run.batch * cfg.context);
  int64_t step = first_step;
  double next_eval_seconds =
      eval_seconds > 0 ? (std::floor(clock.resumed_seconds() / eval_seconds) + 1) * eval_seconds : 0;
  LmTrainResult result{first_step, first_step, cfg, past.dev, 0, 0};
  std::vector<std::pair<double, double>> train_losses = past.train_losses;
  double trained_seconds_this_call = 0;
  bool saved_last = false;

  const auto evaluate_and_save = [&] {
    const double trained = clock.run_seconds();  // the evaluation's own time is not training
    const TrainClock::Pause pause(clock);
    if (!dev_exe)
      dev_exe =
          compiler::make_executable(build_lm_loss_graph(cfg, dev.batches.front().shape()[0], cfg.context), o.exec);
    bind_initial_values(*dev_exe, run.seed);
    const double loss = dev_loss(*dev_exe, *exe, dev);
    const double minutes = trained / 60;
    bool best = true;
    for (const LmEvalPoint& p : result.dev) best = best && loss < p.loss;
    result.dev.push_back({step, minutes, loss});
    std::ostringstream line;
    line << "dev at step " << step << " (" << duration_text(trained) << "): loss " << loss << "  perplexity "
         << std::exp(loss) << "  " << loss / std::log(2.0) << " bits/byte" << (best ? "  (best)" : "");
    progress.message(line.str());
    run_log.dev_metrics(
        step, minutes, {{"loss", loss}, {"perplexity", std::exp(loss)}, {"bits_per_byte", loss / std::log(2.0)}}, best);
    save_checkpoint(o.checkpoint_dir, checkpoint_of(*exe, run, state_json(run, trained, train_losses, result.dev)));
    write_curve(o.checkpoint_dir, train_losses, result.dev);
    saved_last = true;
  };

  clock.start();
  const double call_start_seconds = clock.run_seconds();
  for (;;) {
    if (last_step >= 0 ? step >= last_step : clock.run_seconds() >= budget_seconds) break;
    exe->bind("tokens", window_batch(train, run.batch, cfg.context, run.seed, step));
    exe->run();
    const double loss = exe->output("loss").f32()();
    const double lr = exe->output(kLearningRateOutput).f32()();
    ++step;
    saved_last = false;
    if (!std::isfinite(loss))
      throw Error("the loss is " + text_of(loss) + " at step " + std::to_string(step) +
                  ": training diverged (a lower --lr or a longer --warmup may help); the last checkpoint in " +
                  o.checkpoint_dir + " is kept");
    trained_seconds_this_call = clock.run_seconds() - call_start_seconds;
    const double tps =
        tokens_per_step * static_cast<double>(step - first_step) / std::max(trained_seconds_this_call, 1e-9);
    const double eta = last_step >= 0 ? static_cast<double>(last_step - step) * trained_seconds_this_call /
                                            static_cast<double>(step - first_step)
                                      : budget_seconds - clock.run_seconds();
    progress.update({step, loss, tps, lr, eta});
    if (step % std::max<int64_t>(1, o.log_every / 10) == 0 || step == first_step + 1) {
      train_losses.emplace_back(static_cast<double>(step), loss);
      if (step % o.log_every == 0) run_log.train(step, loss, lr, tps, clock.run_seconds() / 60);
    }
    const bool due = (eval_steps > 0 && (step - first_step) % eval_steps == 0) ||
                     (eval_seconds > 0 && clock.run_seconds() >= next_eval_seconds);
    if (due) {
      while (eval_seconds > 0 && next_eval_seconds <= clock.run_seconds()) next_eval_seconds += eval_seconds;
      evaluate_and_save();
    }
  }
  if (!saved_last) evaluate_and_save();
  result.last_step = step;
  result.tokens_per_second = trained_seconds_this_call > 0
                                 ? tokens_per_step * static_cast<double>(step - first_step) / trained_seconds_this_call
                                 : 0;
  result.train_minutes = clock.run_seconds() / 60;
  return result;
}

}  // namespace kiln::models
