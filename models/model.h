#pragma once
// The model seam: what checkpoints and commands know of a model kind, one
// registry entry per kind (models/model.cpp lists them), in the style of the
// ops' OpDef table. A checkpoint records its kind and its config as the kind's
// own JSON; loading one asks the kind which params that config declares.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::models {

struct ModelKind {
  std::string name;     // as `kiln train --model NAME` and checkpoints name it
  std::string summary;  // one line, for --help
  // The names and types of the params of a config given as the kind's JSON;
  // kiln::Error naming the key for a bad config.
  std::function<std::vector<std::pair<std::string, TensorType>>(const std::string& config_json)> param_types;
  // The config in a few words, for messages: "'small' (vocab 8000, d_model 256, ...)".
  std::function<std::string(const std::string& config_json)> describe;
};

// The kind named `name`; kiln::Error naming the kinds there are.
const ModelKind& model_kind(const std::string& name);
// Every kind's name, in registry order.
std::vector<std::string> model_kind_names();

// The kinds' names as "transformer, lm" and their one-line summaries, for help texts.
std::string model_kinds_help();

}  // namespace kiln::models
