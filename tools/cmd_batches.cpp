// `kiln batches`: the batches a training run sees (or a split's evaluation
// batches) as subword ids in a file (models/tasks/batch_file.h), for another
// trainer to train on exactly the same data.
#include "tools/cmd_batches.h"
#include "tools/flag_checks.h"
#include "tools/output_file.h"
#include "tools/path_checks.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "engine/ir/error.h"
#include "models/tasks/batch_file.h"
#include "models/train/recipe.h"
#include "models/train/task_setup.h"

namespace kiln::cli {

CLI::App* add_batches_command(CLI::App& app, BatchesOptions& opts) {
  auto* cmd = app.add_subcommand("batches", "Write a task's training batches (or a split's) as subword ids, JSON Lines");
  cmd->add_option("--task", opts.task, "the task (text: the corpus a `kiln train --train ...` run prepared)")
      ->check(CLI::IsMember({"copy", "de-en", "text"}))
      ->capture_default_str();
  cmd->add_option("--checkpoint", opts.checkpoint_dir,
                  "the run's checkpoint directory (de-en: its spm.model, learned there if missing; text: its "
                  "corpus.json)")
      ->required();
  cmd->add_option("--split", opts.split, "train: one epoch's shuffled batches; dev or test: the evaluation batches")
      ->check(CLI::IsMember({"train", "dev", "test"}))
      ->capture_default_str();
  cmd->add_option("--epoch", opts.epoch, "train: the epoch (its shuffle)")->check(non_negative(opts.epoch))->capture_default_str();
  cmd->add_option("--seed", opts.seed, "train: the run's seed")->capture_default_str();
  cmd->add_option("--batch-tokens", opts.batch_tokens, "target tokens per batch (default: the recipe's for --minutes)")
      ->check(positive(opts.batch_tokens));
  cmd->add_option("--minutes", opts.minutes, "the training budget whose recipe gives the default batch size (see `kiln train --help`)")
      ->check(positive(opts.minutes));
  cmd->add_option("--data-dir", opts.data_dir, "de-en: the trans-de-en dictionary")
      ->check(dir_to_read())
      ->capture_default_str();
  cmd->add_option("-o,--output", opts.output_path, "the file to write (-: stdout)")
      ->check(file_or_stdout_to_write())
      ->required();
  return cmd;
}

void write_batches(const BatchesOptions& opts) {
  std::error_code ec;
  std::filesystem::create_directories(opts.checkpoint_dir, ec);  // de-en learns its spm.model there
  if (ec) throw Error("--checkpoint " + opts.checkpoint_dir + ": " + ec.message());
  const auto task = models::make_task(opts.task, opts.checkpoint_dir, opts.data_dir, /*may_learn_subwords=*/true);
  const int64_t tokens = opts.batch_tokens > 0 ? opts.batch_tokens : models::choose_recipe(*task, opts.minutes).recipe.batch_tokens;
  std::vector<models::Batch> batches;
  if (opts.split == "train") {
    batches = task->train_batches(opts.seed, opts.epoch, tokens);
  } else {
    for (auto& [indices, batch] : task->eval_batches(models::parse_split(opts.split), tokens))
      batches.push_back(std::move(batch));
  }
  write_output(opts.output_path, models::batch_file_text(batches));
  (opts.output_path == "-" ? std::cerr : std::cout) << "wrote " << batches.size() << " " << opts.task << " " << opts.split << " batches to "
            << (opts.output_path == "-" ? "stdout" : opts.output_path) << '\n';
}

}  // namespace kiln::cli
