#pragma once
// The tasks the trainer knows by name, where each keeps its files, and the
// training settings that suit each.
#include <cstdint>
#include <memory>
#include <string>

#include "models/tasks/task.h"

namespace kiln::models {

// copy | de-en. de-en reads `data_path` (the trans-de-en package) and keeps its
// subword model in CHECKPOINT_DIR/spm.model, learned there on first use when
// `may_learn_subwords` (a new training run); otherwise a missing model is an error.
// kiln::Error naming the choices for another name.
std::unique_ptr<Task> make_task(const std::string& name, const std::string& checkpoint_dir,
                                const std::string& data_path, bool may_learn_subwords);

struct TaskDefaults {
  int64_t batch_tokens;  // target tokens per training batch
  int64_t warmup;        // Adam warm-up steps
  double lr_factor;      // the schedule's factor
};
TaskDefaults task_defaults(const std::string& name);

}  // namespace kiln::models
