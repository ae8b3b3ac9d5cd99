// `kiln average`: checkpoint averaging as in the paper.
//   kiln average --checkpoint DIR --last N -o OUT   the last N snapshots of a run
//   kiln average --checkpoint DIR --best N -o OUT   its N best evaluated checkpoints
//   kiln average CKPT CKPT... -o OUT                  any checkpoints of one model
// OUT gets the averaged checkpoint and the task's files (e.g. spm.model) of the
// first input's directory, so it loads, translates and evaluates on its own.
#include "tools/cmd_average.h"
#include "tools/flag_checks.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "engine/ir/error.h"
#include "models/best_checkpoints.h"
#include "models/checkpoint_average.h"

namespace kiln::cli {

namespace fs = std::filesystem;

CLI::App* add_average_command(CLI::App& app, AverageOptions& opts) {
  auto* cmd = app.add_subcommand("average", "Average checkpoints param by param (the paper's last-N averaging)");
  cmd->add_option("CHECKPOINT", opts.inputs, "checkpoint directories to average");
  cmd->add_option("--checkpoint", opts.run_dir, "a training run's checkpoint directory, whose snapshots to average");
  cmd->add_option("--last", opts.last, "--checkpoint: average its last N snapshots (kiln train --keep-snapshots)")
      ->check(positive(opts.last));
  cmd->add_option("--best", opts.best,
                  "--checkpoint: average its N best evaluated checkpoints (kiln train --keep-best)")
      ->check(positive(opts.best))
      ->excludes("--last");
  cmd->add_option("-o,--output", opts.output_dir, "the directory to write the averaged checkpoint to")->required();
  return cmd;
}

void average(const AverageOptions& opts) {
  std::vector<std::string> inputs = opts.inputs;
  if (!opts.run_dir.empty()) {
    if (!inputs.empty()) throw Error("average: give either CHECKPOINT directories or --checkpoint, not both");
    if (opts.last <= 0 && opts.best <= 0) throw Error("average: --checkpoint needs --last N or --best N");
    if (opts.best > 0) {
      inputs = models::best_snapshots(opts.run_dir, opts.best);
    } else {
      const std::vector<std::string> all = models::snapshots(opts.run_dir);
      if (static_cast<int64_t>(all.size()) < opts.last)
        throw Error("average: --last " + std::to_string(opts.last) + " but " + opts.run_dir + " has " +
                    std::to_string(all.size()) +
                    " snapshots (kiln train --save-every S --keep-snapshots N keeps them)");
      inputs.assign(all.end() - opts.last, all.end());
    }
  } else if (opts.last > 0 || opts.best > 0) {
    throw Error("average: --last and --best need --checkpoint DIR");
  }
  if (inputs.empty()) throw Error("average: no checkpoints given (CHECKPOINT... or --checkpoint DIR --last N)");
  std::error_code ec;
  for (const std::string& in : inputs)
    if (fs::equivalent(in, opts.output_dir, ec))
      throw Error("average: --output " + opts.output_dir + " is one of the inputs; write elsewhere");
  std::vector<models::Checkpoint> checkpoints;
  for (const std::string& in : inputs) checkpoints.push_back(models::load_checkpoint(in));
  const models::Checkpoint averaged = models::average_checkpoints(checkpoints);
  models::save_checkpoint(opts.output_dir, averaged);
  // The task's own files beside the run's checkpoint (a snapshot's run directory is two levels up).
  const fs::path source = opts.run_dir.empty() ? fs::path(inputs.front()) : fs::path(opts.run_dir);
  models::copy_task_files(source.string(), opts.output_dir);
  std::cout << "averaged " << inputs.size() << " checkpoints into " << models::checkpoint_file(opts.output_dir) << '\n';
}

}  // namespace kiln::cli
