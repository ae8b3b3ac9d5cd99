#pragma once
// How the ranks of a data-parallel job start. They must train one model on
// one stream of batches: before the first step they check that their
// settings, kiln binary and data agree (kiln::Error naming what differs, the
// rank and both values: engine/tensor/collectives.h), and they take rank 0's
// params and optimizer state (a checkpoint resumed, or initialized from the seed).
#include <map>
#include <string>

#include "engine/tensor/tensor.h"
#include "models/tasks/task.h"
#include "models/train/batch_stream.h"

namespace kiln::models {

// Every rank calls it, with the run's resolved settings (run_settings' text),
// the task, the stream it will train on (its first epoch is compared) and
// its params and optimizer state, which become rank 0's.
void start_ranks_together(const std::string& settings, const Task& task, BatchStream& batches,
                          std::map<std::string, Tensor>& tensors);

}  // namespace kiln::models
