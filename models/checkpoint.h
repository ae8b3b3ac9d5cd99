#pragma once
// Training checkpoints. A checkpoint is a directory holding
// `checkpoint.safetensors`: every param and every optimizer state tensor
// (including %step) by name, and the metadata "format" = "kiln-checkpoint-1",
// "model" (the model kind, models/model.h; checkpoints without it are
// "transformer"), "task" (the task's name), "config" (the kind's config as
// JSON: config_to_json of a TransformerConfig) and "trainer" (the trainer's
// own resume state as JSON, opaque here). Tasks may keep their own files in the same directory (e.g.
// `spm.model`), written atomically by their owners.
#include <map>
#include <string>
#include <vector>

#include "engine/atomic_file.h"
#include "engine/safetensors.h"
#include "engine/tensor/tensor.h"
#include "models/transformer/config.h"

namespace kiln::models {

struct Checkpoint {
  std::string task;
  TransformerConfig config;               // the Transformer's (model "transformer")
  std::map<std::string, Tensor> tensors;  // params and optimizer state, by name
  std::string trainer_state;              // JSON, stored and returned as is
  std::string model = "transformer";      // the model kind (models/model.h)
  std::string model_config;               // its config as the kind's JSON (the Transformer's too, when loaded)
};

// The file inside a checkpoint directory that holds the tensors and metadata.
std::string checkpoint_file(const std::string& dir);

// Creates `dir` if needed and writes the checkpoint atomically, together with
// the files `beside` it (the task's own, e.g. spm.model: task_files in
// checkpoint_average.h), all or none. Refuses (kiln::Error naming the tensor)
// any non-finite f32 value before writing anything, so a diverged run never
// replaces a good checkpoint.
void save_checkpoint(const std::string& dir, const Checkpoint& ckpt, const std::vector<FileBytes>& beside = {});

// The checkpoint without its optimizer state: the params and the step counter,
// for checkpoints kept to be averaged, evaluated or translated, not trained on
// (a third of the size: Adam keeps two moments per param).
Checkpoint params_only(const Checkpoint& ckpt);

// kiln::Error naming the directory for a missing directory or file, a truncated
// or corrupt file, and every problem checkpoint_from finds.
Checkpoint load_any_checkpoint(const std::string& dir);
// load_any_checkpoint of a Transformer's checkpoint; kiln::Error naming the
// kind the directory holds otherwise.
Checkpoint load_checkpoint(const std::string& dir);

// The checkpoint in a safetensors file's contents, read from FILE (named in every
// error), trusting nothing in it: kiln::Error for a wrong format marker, a
// missing task or trainer state, a bad config or one whose model would not fit
// in memory (checked before any param list is built), params that do not fit
// the checkpoint's own config, a step counter that is not a non-negative i32[],
// and a non-finite f32 value (naming the tensor and the element).
Checkpoint checkpoint_from(SafetensorsFile contents, const std::string& file);

// Throws kiln::Error naming the first param of param_types(expected) that is
// missing from the checkpoint or has another dtype or shape (a checkpoint of
// another config), with both configs' names.
void check_matches(const Checkpoint& ckpt, const TransformerConfig& expected);

}  // namespace kiln::models
