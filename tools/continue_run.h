#pragma once
// `kiln train --checkpoint DIR` on a directory that holds a run continues it, as
// fairseq and Marian do (re-running the command that an interruption stopped is
// the way to finish it): DIR/settings.toml, the settings the run last started
// with, gives the task and every setting that may change on resume
// (models/train/resume_settings.h) that the command line leaves out, and the
// budget when it gives neither --minutes nor --steps; the other settings come
// from the checkpoint itself. So `kiln train --checkpoint DIR --resume` alone
// continues a run.
#include <string>
#include <vector>

namespace kiln::cli {

// The arguments of `kiln train` (args[0] "train", --config-file already
// expanded) with what DIR/settings.toml adds, when --checkpoint DIR holds a run;
// otherwise `args` as they are. kiln::Error naming the flag, its value, the
// run's and the directory for a setting the run keeps that the command line
// gives another value (the run's update-freq excepted: the trainer checks it
// against the rank count), or naming the file when it cannot be read; for
// --resume when DIR holds no run.
std::vector<std::string> continue_run_args(const std::vector<std::string>& args);

}  // namespace kiln::cli
