#include "models/lm/lm_checkpoint.h"

#include "engine/ir/error.h"
#include "models/lm/lm.h"

namespace kiln::models {

LmCheckpoint load_lm_checkpoint(const std::string& dir) {
  Checkpoint ckpt = load_any_checkpoint(dir);
  if (ckpt.model != "lm")
    throw Error(dir + " holds a checkpoint of model '" + ckpt.model +
                "', not of a language model (kiln train --model lm)");
  const LmConfig config = lm_config_from_json(ckpt.model_config);
  return {std::move(ckpt), config};
}

void bind_lm_params(Executable& exe, const LmConfig& cfg, const std::map<std::string, Tensor>& params) {
  for (const auto& [name, type] : lm_param_types(cfg)) {
    const auto it = params.find(name);
    if (it == params.end()) throw Error("language model: no tensor for param '" + name + "'");
    exe.bind(name, it->second);
  }
}

}  // namespace kiln::models
