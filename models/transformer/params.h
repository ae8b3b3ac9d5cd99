#pragma once
// The Transformer's params: names, types and init attributes, declared the same
// way (same order, same attributes) in every graph of a config.
#include <map>
#include <string>
#include <vector>

#include "engine/ir/builder.h"
#include "models/transformer/config.h"

namespace kiln::models {

struct ParamSpec {
  std::string name;
  TensorType type;
  Attrs attrs;  // {init=...} (and std for "normal")
};

// Every param of `cfg`, in declaration order.
std::vector<ParamSpec> param_specs(const TransformerConfig& cfg);

// The name of the positional-encodings state f32[max_len, D] {init="sinusoidal"}.
inline const std::string kPosEncState = "pos_enc";

// The declared params and the positional encodings of one graph, by name.
class ModelParams {
 public:
  // Declares every param of `cfg`, then state %pos_enc.
  ModelParams(Builder& b, const TransformerConfig& cfg);
  // The param named `name`; throws kiln::Error if `cfg` has none (a builder bug).
  Value at(const std::string& name) const;
  Value pos_enc() const { return pos_enc_; }

 private:
  std::map<std::string, Value> params_;
  Value pos_enc_;
};

}  // namespace kiln::models
