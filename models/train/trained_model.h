#pragma once
// A trained model ready to decode: a checkpoint with its task (tokenizer,
// splits) and a Decoder over its params. What `kiln translate` and `kiln eval`
// start from.
#include <memory>
#include <string>

#include "compiler/backend.h"
#include "models/checkpoint.h"
#include "models/decode/decode_all.h"
#include "models/decode/decoder.h"
#include "models/tasks/task.h"

namespace kiln::models {

struct TrainedModel {
  Checkpoint checkpoint;
  std::unique_ptr<Task> task;
  std::unique_ptr<Decoder> decoder;
};

// kiln::Error for a missing, truncated or corrupt checkpoint, params that do
// not fit its config, or a task whose vocabulary differs from the config's.
TrainedModel load_trained_model(const std::string& checkpoint_dir, const std::string& data_path,
                                const compiler::BackendOptions& exec);

}  // namespace kiln::models
