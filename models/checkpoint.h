#pragma once
// Training checkpoints. A checkpoint is a directory holding
// `checkpoint.safetensors`: every param and every optimizer state tensor
// (including %step) by name, and the metadata "format" = "kiln-checkpoint-1",
// "task" (the task's name), "config" (config_to_json of the model's
// TransformerConfig) and "trainer" (the trainer's own resume state as JSON,
// opaque here). Tasks may keep their own files in the same directory (e.g.
// `spm.model`), written atomically by their owners.
#include <map>
#include <string>

#include "engine/tensor/tensor.h"
#include "models/transformer/config.h"

namespace kiln::models {

struct Checkpoint {
  std::string task;
  TransformerConfig config;
  std::map<std::string, Tensor> tensors;  // params and optimizer state, by name
  std::string trainer_state;              // JSON, stored and returned as is
};

// The file inside a checkpoint directory that holds the tensors and metadata.
std::string checkpoint_file(const std::string& dir);

// Creates `dir` if needed and writes the checkpoint atomically. Refuses
// (kiln::Error naming the tensor) any non-finite f32 value before writing
// anything, so a diverged run never replaces a good checkpoint.
void save_checkpoint(const std::string& dir, const Checkpoint& ckpt);

// kiln::Error naming the directory for a missing directory or file, a truncated
// or corrupt file, a wrong format marker, a bad config, or params that do not fit
// the checkpoint's own config.
Checkpoint load_checkpoint(const std::string& dir);

// Throws kiln::Error naming the first param of param_types(expected) that is
// missing from the checkpoint or has another dtype or shape (a checkpoint of
// another config), with both configs' names.
void check_matches(const Checkpoint& ckpt, const TransformerConfig& expected);

}  // namespace kiln::models
