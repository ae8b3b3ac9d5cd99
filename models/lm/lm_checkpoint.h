#pragma once
// A language model's checkpoint as its commands load it, and its params bound
// to any of its graphs.
#include <map>
#include <string>

#include "engine/executable.h"
#include "models/checkpoint.h"
#include "models/lm/config.h"

namespace kiln::models {

struct LmCheckpoint {
  Checkpoint ckpt;
  LmConfig config;
};

// load_any_checkpoint of a language model's run; kiln::Error naming the kind
// DIR holds otherwise.
LmCheckpoint load_lm_checkpoint(const std::string& dir);

// Binds every param of `cfg` from `params`; kiln::Error naming a missing one.
void bind_lm_params(Executable& exe, const LmConfig& cfg, const std::map<std::string, Tensor>& params);

}  // namespace kiln::models
