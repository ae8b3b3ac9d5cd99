#pragma once
// The Transformer's building blocks, as builder calls on activations kept as
// rows f32[B*L, D] (so every Linear is one plain matmul); only attention
// reshapes them to [B, H, L, D/H].
#include <optional>
#include <string>

#include "engine/ir/builder.h"
#include "models/transformer/config.h"
#include "models/transformer/params.h"

namespace kiln::models {

// What every block needs: the builder, the params, and the dropout settings.
class Layers {
 public:
  // `dropout_key`: the i32[] key of every dropout node (the step counter), or none
  // for inference (dropout off).
  Layers(Builder& b, const TransformerConfig& cfg, const ModelParams& params, std::optional<Value> dropout_key);

  Builder& builder() { return b_; }
  const TransformerConfig& config() const { return cfg_; }
  Value param(const std::string& name) const { return params_.at(name); }

  // Dropout at cfg.dropout with the next seed (each node its own mask); the
  // identity when dropout is off or the rate is 0.
  Value dropout(Value x);
  // x @ prefix.<w> + prefix.<bias> for rows x f32[N, in].
  Value linear(Value x, const std::string& prefix, const std::string& w, const std::string& bias);
  // Post-LN residual: LayerNorm_prefix(x + Dropout(sublayer_out)).
  Value residual_norm(Value x, Value sublayer_out, const std::string& prefix);
  // Position-wise FFN: relu(x W1 + b1) W2 + b2.
  Value feed_forward(Value x, const std::string& prefix);
  // Token embeddings times sqrt(d_model) plus the positional encodings, then
  // dropout: tokens i32[B, L] -> rows f32[B*L, D]. L <= max_len (the graph builders check).
  Value embed(Value tokens);

  // A scalar f32 constant.
  Value scalar(double v);

 private:
  Builder& b_;
  const TransformerConfig& cfg_;
  const ModelParams& params_;
  std::optional<Value> dropout_key_;
  int64_t next_dropout_seed_ = 1;
};

}  // namespace kiln::models
