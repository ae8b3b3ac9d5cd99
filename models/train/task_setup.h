#pragma once
// The tasks the trainer knows by name, and where each keeps its files (the
// settings that suit each are in recipe.h).
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>

#include "models/tasks/task.h"
#include "models/tasks/text_corpus_prep.h"

namespace kiln::models {

// copy | de-en | text. text opens the corpus prepared for the checkpoint
// (models/tasks/text_task.h: corpus.json and the subword models in
// CHECKPOINT_DIR). de-en reads `data_path` (the trans-de-en package) and keeps its
// subword model in CHECKPOINT_DIR/spm.model, learned there on first use when
// `may_learn_subwords` (a new training run); otherwise a missing model is an error.
// kiln::Error naming the choices for another name.
std::unique_ptr<Task> make_task(const std::string& name, const std::string& checkpoint_dir,
                                const std::string& data_path, bool may_learn_subwords);

// The text task's corpus for the run in checkpoint_dir (models/tasks/text_corpus_prep.h).
// A new run prepares `text` into prepared_dir (default CHECKPOINT_DIR/data), or
// finds it prepared there, and without --train takes the corpus prepared in
// prepared_dir; a continued run trains on the corpus its checkpoint names and
// refuses other files or settings given again. Progress goes to `log`.
void prepare_run_corpus(const TextTaskOptions& text, const std::string& prepared_dir, const std::string& checkpoint_dir,
                        bool continued, std::ostream& log);

}  // namespace kiln::models
