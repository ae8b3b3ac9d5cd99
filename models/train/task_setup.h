#pragma once
// The tasks the trainer knows by name, and where each keeps its files (the
// settings that suit each are in recipe.h).
#include <cstdint>
#include <memory>
#include <string>

#include "models/tasks/task.h"

namespace kiln::models {

// copy | de-en | text. text opens the corpus prepared for the checkpoint
// (models/tasks/text_task.h: corpus.json and the subword models in
// CHECKPOINT_DIR). de-en reads `data_path` (the trans-de-en package) and keeps its
// subword model in CHECKPOINT_DIR/spm.model, learned there on first use when
// `may_learn_subwords` (a new training run); otherwise a missing model is an error.
// kiln::Error naming the choices for another name.
std::unique_ptr<Task> make_task(const std::string& name, const std::string& checkpoint_dir,
                                const std::string& data_path, bool may_learn_subwords);

}  // namespace kiln::models
