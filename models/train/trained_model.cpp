#include "models/train/trained_model.h"

#include "engine/ir/error.h"
#include "models/train/evaluate.h"
#include "models/train/task_setup.h"

namespace kiln::models {
TrainedModel load_trained_model(const std::string& checkpoint_dir, const std::string& data_path,
                                const compiler::BackendOptions& exec) {
  TrainedModel m;
  m.checkpoint = load_checkpoint(checkpoint_dir);
  check_matches(m.checkpoint, m.checkpoint.config);
  m.task = make_task(m.checkpoint.task, checkpoint_dir, data_path, false);
  if (m.task->vocab_size() != m.checkpoint.config.vocab)
    throw Error(checkpoint_file(checkpoint_dir) + ": the model's vocabulary has " +
                std::to_string(m.checkpoint.config.vocab) + " tokens, task " + m.task->name() + "'s has " +
                std::to_string(m.task->vocab_size()));
  m.decoder = std::make_unique<Decoder>(m.checkpoint.config, m.checkpoint.tensors, exec);
  return m;
}

}  // namespace kiln::models
