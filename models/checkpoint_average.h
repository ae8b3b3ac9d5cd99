#pragma once
// Checkpoint averaging as in the paper (the last N checkpoints, saved at
// intervals, averaged param by param), and the snapshots it averages: a trainer
// that keeps snapshots writes each save's params (params_only) also to
// DIR/snapshots/step-NNNNNNNN/ and removes all but the latest `keep`.
#include <cstdint>
#include <string>
#include <vector>

#include "models/checkpoint.h"

namespace kiln::models {

// Every param of the checkpoints (the tensors of param_types(config)) is the
// element-wise mean of theirs, accumulated in double; everything else (the
// optimizer state, if the last one has it, the step, the trainer state) is the
// last checkpoint's.
// kiln::Error unless they share the task and the architecture.
Checkpoint average_checkpoints(const std::vector<Checkpoint>& checkpoints);

// DIR/snapshots/step-NNNNNNNN (the step zero-padded to 8 digits).
std::string snapshot_dir(const std::string& dir, int64_t step);

// The snapshot directories of DIR, oldest first (by step).
std::vector<std::string> snapshots(const std::string& dir);

// The regular files of run directory FROM other than its checkpoint and its
// records (the task's own, e.g. de-en's spm.model), read now, as the files to
// write into TO beside a checkpoint (save_checkpoint's `beside`), so that a
// snapshot or an average loads, evaluates and translates by itself. kiln::Error
// naming the file or directory that cannot be read.
std::vector<FileBytes> task_files(const std::string& from, const std::string& to);

// Removes all but the latest `keep` snapshots of DIR.
void prune_snapshots(const std::string& dir, int64_t keep);

}  // namespace kiln::models
