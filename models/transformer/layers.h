#pragma once
// The Transformer's building blocks, as builder calls on activations kept as
// rows f32[B*L, D] (so every Linear is one plain matmul); only attention
// reshapes them to [B, H, L, D/H].
#include <functional>
#include <optional>
#include <string>

#include "engine/ir/builder.h"
#include "models/transformer/config.h"
#include "models/transformer/params.h"

namespace kiln::models {

// What keys a training graph's dropout masks: the step counter (i32[]) and,
// when the batch of `examples` rows is a part of a larger one (the ranks of a
// data-parallel job, --update-freq's micro-batches), its first example's row in
// that batch (i32[]), so every part draws the masks of the whole batch
// (ops/dropout.h).
struct DropoutKey {
  Value step;
  std::optional<Value> first_example;
  int64_t examples = 0;
};

// What every block needs: the builder, the params, and the dropout settings.
class Layers {
 public:
  // `dropout_key`: what keys every dropout node, or none for inference (dropout off).
  Layers(Builder& b, const TransformerConfig& cfg, const ModelParams& params, std::optional<DropoutKey> dropout_key);

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
  // dropout: tokens i32[B, L] at positions 0..L-1 -> rows f32[B*L, D]. L <=
  // max_len (the graph builders check).
  Value embed(Value tokens);
  // The same for tokens i32[B, 1] at position `pos` (i32[], known only at run
  // time: decoding's step) -> rows f32[B, D].
  Value embed_at(Value tokens, Value pos);
  // The tied pre-softmax projection x @ embed^T: rows f32[N, D] -> logits f32[N, V].
  Value logits(Value x);

  // A sublayer as a function of its input rows.
  using Sublayer = std::function<Value(Value)>;
  // One encoder layer `prefix` (enc.L): self_attention then the FFN, each
  // residual_norm'ed (ln1, ln2). Every node is in the model scope of its part:
  // "enc.0.self_attn", "enc.0.ln1", "enc.0.ffn", "enc.0.ln2" (the params' prefixes).
  Value encoder_layer(Value x, const std::string& prefix, const Sublayer& self_attention);
  // One decoder layer `prefix` (dec.L) around its two attentions, each
  // residual_norm'ed: ln1 after self_attention, ln2 after cross_attention, ln3
  // after the FFN; scoped like encoder_layer. The attentions are passed in because
  // they differ: the full decoder attends over the whole target, decoding's step
  // over its caches.
  Value decoder_layer(Value x, const std::string& prefix, const Sublayer& self_attention,
                      const Sublayer& cross_attention);

  // A scalar f32 constant.
  Value scalar(double v);

  // Attention written out, softmax(q k^T * scale + mask) v, with each one's
  // weights f32[B, H, Lq, Lk] an output named PREFIX.weights, instead of
  // flash_attention, which never stores them (`kiln translate --attention`).
  void keep_attention_weights() { keep_attention_weights_ = true; }
  bool keeps_attention_weights() const { return keep_attention_weights_; }

 private:
  // LayerNorm_norm(x + Dropout(sublayer(x))) of layer `prefix`: the sublayer's
  // nodes in scope prefix.name, the Add & Norm's in prefix.norm.
  Value add_norm(Value x, const std::string& prefix, const std::string& name, const Sublayer& sublayer,
                 const std::string& norm);
  // embed's sum for tokens i32[B, L] with their positional encodings f32[L, D].
  Value embed_with(Value tokens, Value positions);

  Builder& b_;
  const TransformerConfig& cfg_;
  const ModelParams& params_;
  std::optional<DropoutKey> dropout_key_;
  int64_t next_dropout_seed_ = 1;
  bool keep_attention_weights_ = false;
};

}  // namespace kiln::models
