#include "models/lm/lm_kind.h"

#include "models/lm/config.h"
#include "models/lm/lm.h"

namespace kiln::models {

ModelKind lm_model_kind() {
  return {"lm", "a decoder-only (GPT-style) language model, trained on plain text, that generates",
          [](const std::string& json) { return lm_param_types(lm_config_from_json(json)); },
          [](const std::string& json) { return describe(lm_config_from_json(json)); }};
}

}  // namespace kiln::models
