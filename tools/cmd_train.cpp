#include <CLI/CLI.hpp>
#include <iomanip>
#include <iostream>

#include "compiler/profile.h"
#include "compiler/runtime/kiln_runtime.h"
#include "compiler/runtime/mpi_job.h"
#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/tensor/collectives.h"
#include "models/train/recipe.h"
#include "models/train/resume_settings.h"
#include "tools/cli_common.h"
#include "tools/corpus_flags.h"
#include "tools/pass_flags.h"
#include "tools/flag_checks.h"
#include "tools/path_checks.h"
#include "tools/profile_table.h"

namespace kiln::cli {

CLI::App* add_train_command(CLI::App& app, models::TrainOptions& opts) {
  auto* cmd = app.add_subcommand("train",
                                 "Train the Transformer on a task, with "
                                 "checkpoints, dev scores and a loss "
                                 "curve (DIR/loss_curve.svg)");
  auto* task = cmd->add_option("--task", opts.task,
                               "copy (the synthetic copy task), de-en (German to English, trans-de-en) or text (your "
                               "own parallel corpus: --train, --valid; the default when --train is given)")
                   ->check(CLI::IsMember({"copy", "de-en", "text"}));
  const std::string group = "Your own corpus (--task text)";
  add_corpus_flags(*cmd, opts.text, group);
  cmd->add_option("--prepared", opts.prepared_dir,
                  "where the corpus is prepared (subword models, ids) and found again by later runs with the same "
                  "files and settings (default: CHECKPOINT/data); alone, without --train: the corpus `kiln prepare` "
                  "wrote there")
      ->check(dir_to_read())
      ->group(group);
  cmd->add_option("--config", opts.config,
                  "model preset: tiny, small or base (default: the recipe's, or the "
                  "checkpoint's)")
      ->check(CLI::IsMember({"tiny", "small", "base"}));
  cmd->add_option("--checkpoint", opts.checkpoint_dir,
                  "the run's directory; one that holds a run is continued (as fairseq and Marian do: running the "
                  "command again finishes an interrupted run), its settings.toml giving what the command line "
                  "leaves out")
      ->check(dir_to_write())
      ->required();
  auto* minutes = cmd->add_option("--minutes", opts.minutes,
                                  "train until the run has trained this long, --resume included: wall clock with "
                                  "compiles, without dev evaluations and saves")
                      ->check(positive(opts.minutes));
  auto* steps = cmd->add_option("--steps", opts.steps, "train this many steps (more, when the run continues)")
                    ->check(positive(opts.steps));
  minutes->excludes(steps);
  cmd->add_flag("--resume", opts.resume,
                "continue the run in --checkpoint (an error if it holds none), on the same trajectory; alone, its "
                "settings.toml gives the rest. A continued run may change " + models::resumable_flags_text() +
                    " and the compiler flags; any other setting given must be the run's");
  cmd->add_option_function<uint64_t>(
      "--seed", [&opts](const uint64_t& seed) { opts.seed = seed; },
      "seed of the param initialization, dropout and batch order (default 0, "
      "or the checkpoint's)");
  add_backend_flags(*cmd, opts.exec);
  add_compiler_flags(cmd, opts.exec.pipeline, &opts.exec.kernels);
  cmd->add_option("--batch-tokens", opts.batch_tokens, "target tokens per batch (default: the recipe's)")
      ->check(positive(opts.batch_tokens));
  cmd->add_option("--max-train-len", opts.max_train_len,
                  "train, and measure the dev loss, only on bucket shapes with source and target lengths <= N "
                  "(each shape costs a JIT compile of the training step; default: all)")
      ->check(positive(opts.max_train_len));
  cmd->add_option("--update-freq", opts.update_freq,
                  "parts per update on each rank (gradient accumulation): an update trains on a batch of "
                  "--batch-tokens x N x ranks tokens, cut into parts of --batch-tokens, and equals that whole batch "
                  "(default 1, or what the checkpoint's updates divided by the ranks give)")
      ->check(in_range(opts.update_freq, 1, 1024));
  cmd->add_option("--warmup", opts.warmup, "Adam warm-up steps (default: the recipe's)")->check(positive(opts.warmup));
  cmd->add_option("--lr-factor", opts.lr_factor,
                  "factor of the rate factor * d_model^-0.5 * min(step^-0.5, "
                  "step * warmup^-1.5) (default: the recipe's)")
      ->check(positive(opts.lr_factor));
  cmd->add_option("--eval-every", opts.eval_every,
                  "steps between dev evaluations (default, when --eval-minutes and --save-every are not given "
                  "either: an evaluation and a save at each fifth of the budget, every N/5 steps of --steps N or "
                  "M/5 minutes of --minutes M; and at the end)")
      ->check(positive(opts.eval_every));
  cmd->add_option("--eval-minutes", opts.eval_minutes,
                  "minutes of training between dev evaluations, each followed by a save (counted over resumes)")
      ->check(positive(opts.eval_minutes));
  cmd->add_option("--save-every", opts.save_every, "steps between checkpoints (default: as --eval-every's)")
      ->check(positive(opts.save_every));
  cmd->add_option("--keep-snapshots", opts.keep_snapshots,
                  "also keep the params of each of the last N saves in DIR/snapshots/ (without Adam's moments: a "
                  "third of a checkpoint), for `kiln average --last N`; 0: none. The run ends saying what they take "
                  "on disk")
      ->check(non_negative(opts.keep_snapshots))
      ->capture_default_str();
  cmd->add_option("--best-metric", opts.best_metric,
                  "the dev metric that chooses the model to keep in DIR/best/ and stops early: loss, bleu or chrf "
                  "(default bleu, or the checkpoint's)")
      ->check(CLI::IsMember({"loss", "bleu", "chrf"}));
  cmd->add_option("--patience", opts.patience,
                  "stop when N dev evaluations in a row have not beaten the best (default: never)")
      ->check(positive(opts.patience));
  cmd->add_option("--keep-best", opts.keep_best,
                  "also keep the params of the N best evaluated checkpoints in DIR/best-snapshots/, for "
                  "`kiln average --best N` (1: DIR/best alone)")
      ->check(positive(opts.keep_best))
      ->capture_default_str();
  cmd->add_option("--eval-sentences", opts.eval_sentences, "dev sentences decoded for BLEU and exact match")
      ->check(positive(opts.eval_sentences))
      ->capture_default_str();
  cmd->add_option("--log-every", opts.log_every, "steps between progress lines when stderr is not a terminal")
      ->check(positive(opts.log_every))
      ->capture_default_str();
  cmd->add_option("--dropout", opts.dropout, "dropout rate (default: the recipe's)")->check(in_range(opts.dropout, 0.0, 0.99));
  cmd->add_option("--label-smoothing", opts.label_smoothing, "label smoothing of the loss (default: the recipe's)")
      ->check(in_range(opts.label_smoothing, 0.0, 0.99));
  cmd->add_option("--d-model", opts.d_model, "override the preset's d_model")->check(positive(opts.d_model));
  cmd->add_option("--heads", opts.heads, "override the preset's attention heads")->check(positive(opts.heads));
  cmd->add_option("--d-ff", opts.d_ff, "override the preset's feed-forward width")->check(positive(opts.d_ff));
  cmd->add_option("--layers", opts.layers, "override the preset's encoder and decoder layers")
      ->check(positive(opts.layers));
  cmd->add_flag("--unfused-loss", opts.unfused_loss,
                "the loss as the output projection's matmul, then cross_entropy, instead of linear_cross_entropy "
                "(which never stores the [tokens, vocab] logits): to compare the two");
  cmd->add_option("--data-dir", opts.data_dir, "de-en: the trans-de-en dictionary")
      ->check(dir_to_read())
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "--profile",
         [&opts](const std::string& trace) {
           opts.profile = [trace](const std::vector<models::ProfiledStep>& steps) {
             std::vector<WeightedStep> weighted;
             for (const models::ProfiledStep& s : steps)
               weighted.push_back({&s.step->compiled().program, &s.step->run_profile(), s.shape, s.steps});
             print_weighted_profile(weighted, std::cout);
             const compiler::JitExecutable& step = *steps.front().step;
             std::cout << "profile of the training step " << steps.front().shape << ", the shape that trained most:\n";
             print_profile_table(step.compiled().program, step.run_profile(), kiln_num_threads(), std::cout);
             write_file_atomically(trace, compiler::chrome_trace(step.compiled().program, step.run_profile()));
             std::cout << "trace (chrome://tracing, ui.perfetto.dev): " << trace << '\n';
           };
         },
         "jit: time every kernel call of the training step (each batch shape's runs 2 to 51) and at the end print "
         "the time by kernel kind over all batch shapes, each weighted by the steps it trained, the table by "
         "kernel of the shape that trained most, and write its Chrome trace to this file")
      ->check(file_to_write())
      ->type_name("TRACE.json");
  // Read by main (tools/config_file.h) before the flags are parsed; declared for --help.
  static std::string config_file;
  cmd->add_option("--config-file", config_file,
                  "read flags from this TOML or INI file, a key per flag (e.g. d-model = 256); DIR/settings.toml of a "
                  "run is one; flags on the command line win");
  cmd->footer([] { return models::recipes_help(); });  // before the passes footer
  // Exactly one budget: CLI11 names the flags in its message (exit 2).
  cmd->callback([cmd, minutes, steps, task, &opts] {
    if (minutes->count() == 0 && steps->count() == 0) throw CLI::RequiredError("--minutes or --steps");
    // The other model kinds' flags (cmd_lm.h) check their own.
    if (const CLI::Option* model = cmd->get_option_no_throw("--model"); model && model->count() > 0 &&
        model->as<std::string>() != "transformer")
      return;
    const bool corpus = !opts.text.train.empty() || !opts.text.valid.empty() || !opts.prepared_dir.empty();
    if (task->count() == 0 && !corpus) throw CLI::RequiredError("--task (or --train and --valid for your own corpus)");
    if (corpus && task->count() > 0 && opts.task != "text")
      throw CLI::ValidationError("--train", "gives a corpus for --task text, not --task " + opts.task);
    if (corpus || (task->count() > 0 && opts.task == "text")) opts.task = "text";
  });
  return cmd;
}

void train(const models::TrainOptions& opts) {
  if (opts.profile && opts.exec.backend != "jit") throw Error("--profile times the JIT's kernels: use --backend jit");
  // mpirun -np N kiln train: one model on N ranks (compiler/runtime/mpi_job.h).
  if (compiler::mpirun_ranks() > 0) compiler::start_mpi_job();
  const models::TrainResult r = models::train(opts);
  if (collectives().rank() != 0) return;  // rank 0 reports for the job
  if (r.budget_spent) return;             // the trainer's one line said so
  std::cout << "trained steps " << r.first_step << ".." << r.last_step << " (" << std::fixed << std::setprecision(1)
            << r.train_minutes << " min in all): " << std::defaultfloat << std::setprecision(6)
            << static_cast<int64_t>(r.tokens_per_second) << " target tokens/s; dev";
  if (!r.dev_losses.empty()) std::cout << " loss " << r.dev_losses.back().loss;
  std::cout << " BLEU " << r.bleu << " chrF " << r.chrf << " exact match " << 100 * r.exact_match
            << "%; checkpoint in " << opts.checkpoint_dir << '\n';
  if (r.best_step >= 0)
    std::cout << "best dev " << (opts.best_metric.empty() ? "bleu" : opts.best_metric) << " " << r.best_score
              << " at step " << r.best_step << " (" << opts.checkpoint_dir << "/best)"
              << (r.stopped_early ? "; stopped early (--patience)" : "") << '\n';
}

}  // namespace kiln::cli
