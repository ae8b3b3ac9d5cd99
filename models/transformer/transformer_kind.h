#pragma once
// The encoder-decoder Transformer's entry in the model registry (models/model.h).
#include "models/model.h"

namespace kiln::models {

ModelKind transformer_model_kind();

}  // namespace kiln::models
