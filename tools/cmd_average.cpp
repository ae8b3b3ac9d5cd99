// `kiln average`: checkpoint averaging as in the paper.
//   kiln average --checkpoint DIR --last N -o OUT   the last N snapshots of a run
//   kiln average --checkpoint DIR --best N -o OUT   its N best evaluated checkpoints
//   kiln average CKPT CKPT... -o OUT                  any checkpoints of one model
// OUT gets the averaged checkpoint and the task's files (e.g. spm.model) of the
// first input's directory, all or none, so it loads, translates and evaluates on
// its own. OUT may not be, or be inside, a run or checkpoint it reads.
#include "tools/cmd_average.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "engine/ir/error.h"
#include "engine/run_dir_lock.h"
#include "models/best_checkpoints.h"
#include "models/checkpoint_average.h"
#include "models/run/progress.h"
#include "tools/flag_checks.h"
#include "tools/path_checks.h"

namespace kiln::cli {

namespace fs = std::filesystem;

CLI::App* add_average_command(CLI::App& app, AverageOptions& opts) {
  auto* cmd = app.add_subcommand("average", "Average checkpoints param by param (the paper's last-N averaging)");
  cmd->add_option("CHECKPOINT", opts.inputs, "checkpoint directories to average")->check(dir_to_read());
  cmd->add_option("--checkpoint", opts.run_dir, "a training run's checkpoint directory, whose snapshots to average")
      ->check(dir_to_read());
  cmd->add_option("--last", opts.last, "--checkpoint: average its last N snapshots (kiln train --keep-snapshots)")
      ->check(positive(opts.last));
  cmd->add_option("--best", opts.best,
                  "--checkpoint: average its N best evaluated checkpoints (kiln train --keep-best)")
      ->check(positive(opts.best))
      ->excludes("--last");
  cmd->add_option("-o,--output", opts.output_dir,
                  "the directory to write the averaged checkpoint to (not inside a run or checkpoint it reads)")
      ->check(dir_to_write())
      ->required();
  return cmd;
}

namespace {

// The checkpoint directories to average: CHECKPOINT..., or --checkpoint's snapshots.
std::vector<std::string> inputs_of(const AverageOptions& opts) {
  if (opts.run_dir.empty()) {
    if (opts.last > 0 || opts.best > 0) throw Error("average: --last and --best need --checkpoint DIR");
    if (opts.inputs.empty()) throw Error("average: no checkpoints given (CHECKPOINT... or --checkpoint DIR --last N)");
    return opts.inputs;
  }
  if (!opts.inputs.empty()) throw Error("average: give either CHECKPOINT directories or --checkpoint, not both");
  if (opts.last <= 0 && opts.best <= 0) throw Error("average: --checkpoint needs --last N or --best N");
  if (opts.best > 0) return models::best_snapshots(opts.run_dir, opts.best);
  const std::vector<std::string> all = models::snapshots(opts.run_dir);
  if (static_cast<int64_t>(all.size()) < opts.last)
    throw Error("average: --last " + std::to_string(opts.last) + " but " + opts.run_dir + " has " +
                std::to_string(all.size()) + " snapshots (kiln train keeps the last --keep-snapshots saves)");
  return {all.end() - opts.last, all.end()};
}

// Refuses an output that is, or is inside, a run or checkpoint the command
// reads: writing there would replace what it averages, or the run's own
// checkpoint and task files.
void check_output_apart(const AverageOptions& opts, const std::vector<std::string>& inputs) {
  struct Read {
    std::string dir;
    std::string what;  // what the directory is, naming the flag that reads it
  };
  std::vector<Read> read;
  if (!opts.run_dir.empty())
    read.push_back({opts.run_dir, "the run directory " + opts.run_dir + " that --checkpoint reads"});
  const std::string flag = opts.run_dir.empty() ? "CHECKPOINT " : "--checkpoint's snapshot ";
  for (const std::string& in : inputs) read.push_back({in, "one of the inputs (" + flag + in + ")"});
  for (const std::string& in : inputs) {
    const std::string run = models::run_of(in);
    read.push_back({run, "the run directory " + run + " of the input " + flag + in});
  }
  const std::string& out = opts.output_dir;
  for (const Read& r : read) {
    if (!is_same_or_inside(out, r.dir)) continue;
    std::error_code ec;
    throw Error("average: --output " + out + (fs::equivalent(out, r.dir, ec) ? " is " : " is inside ") + r.what +
                "; write the average elsewhere");
  }
}

}  // namespace

std::vector<std::string> average_into(const AverageOptions& opts) {
  const std::vector<std::string> inputs = inputs_of(opts);
  check_output_apart(opts, inputs);
  const RunDirLock lock(opts.output_dir, "--output");  // no other kiln command writes it meanwhile
  std::vector<models::Checkpoint> checkpoints;
  {
    models::ItemProgress progress(std::cerr, isatty(STDERR_FILENO), "read", "checkpoints",
                                  static_cast<int64_t>(inputs.size()));
    for (const std::string& in : inputs) {
      checkpoints.push_back(models::load_checkpoint(in));
      progress.advance(1);
    }
  }
  const models::Checkpoint averaged = models::average_checkpoints(checkpoints);
  // The task's own files beside the run's checkpoint (a snapshot's run directory is two levels up),
  // read before anything is written, and written with the average, all or none.
  const fs::path source = opts.run_dir.empty() ? fs::path(inputs.front()) : fs::path(opts.run_dir);
  models::save_checkpoint(opts.output_dir, averaged, models::task_files(source.string(), opts.output_dir));
  return inputs;
}

void average(const AverageOptions& opts) {
  const std::vector<std::string> inputs = average_into(opts);
  std::cout << "averaged " << inputs.size() << " checkpoints into " << models::checkpoint_file(opts.output_dir) << '\n';
}

}  // namespace kiln::cli
