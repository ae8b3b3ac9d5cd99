#pragma once
// The decoder-only language model's entry in the model registry (models/model.h).
#include "models/model.h"

namespace kiln::models {

ModelKind lm_model_kind();

}  // namespace kiln::models
