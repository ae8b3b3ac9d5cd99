#include "models/transformer/layers.h"

#include <cmath>

#include "ops/constant.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/shape_ops.h"

namespace kiln::models {

Layers::Layers(Builder& b, const TransformerConfig& cfg, const ModelParams& params,
               std::optional<DropoutKey> dropout_key)
    : b_(b), cfg_(cfg), params_(params), dropout_key_(dropout_key) {}

Value Layers::scalar(double v) { return ops::fill(b_, {}, v); }

Value Layers::dropout(Value x) {
  if (!dropout_key_ || cfg_.dropout == 0) return x;
  const DropoutKey& k = *dropout_key_;
  if (k.first_example)
    return ops::dropout(b_, x, k.step, *k.first_example, k.examples, cfg_.dropout, next_dropout_seed_++);
  return ops::dropout(b_, x, k.step, cfg_.dropout, next_dropout_seed_++);
}

Value Layers::linear(Value x, const std::string& prefix, const std::string& w, const std::string& bias) {
  return ops::add(b_, ops::matmul(b_, x, param(prefix + "." + w)), param(prefix + "." + bias));
}

Value Layers::residual_norm(Value x, Value sublayer_out, const std::string& prefix) {
  const Value sum = ops::add(b_, x, dropout(sublayer_out));
  return ops::layer_norm(b_, sum, param(prefix + ".gamma"), param(prefix + ".beta"));
}

Value Layers::feed_forward(Value x, const std::string& prefix) {
  return linear(ops::relu(b_, linear(x, prefix, "w1", "b1")), prefix, "w2", "b2");
}

Value Layers::embed(Value tokens) {
  const int64_t len = b_.type(tokens).shape.at(1);
  return embed_with(tokens, ops::slice(b_, params_.pos_enc(), {0}, {0}, {len}));
}

Value Layers::embed_at(Value tokens, Value pos) {
  return embed_with(tokens, ops::gather(b_, params_.pos_enc(), ops::reshape(b_, pos, {1})));
}

Value Layers::embed_with(Value tokens, Value positions) {
  const Shape& shape = b_.type(tokens).shape;  // [B, L]
  const int64_t len = shape.at(1), d = cfg_.d_model;
  const Value rows = ops::gather(b_, param("embed"), ops::reshape(b_, tokens, {shape[0] * len}));  // [B*L, D]
  const Value scaled = ops::mul(b_, rows, scalar(std::sqrt(static_cast<double>(d))));
  const Value sum = ops::add(b_, ops::reshape(b_, scaled, {shape[0], len, d}), positions);
  return dropout(ops::reshape(b_, sum, {shape[0] * len, d}));
}

Value Layers::logits(Value x) { return ops::matmul(b_, x, param("embed"), false, true); }

Value Layers::add_norm(Value x, const std::string& prefix, const std::string& name, const Sublayer& sublayer,
                       const std::string& norm) {
  Value out;
  {
    const Builder::Scope scope(b_, prefix + "." + name);
    out = sublayer(x);
  }
  const Builder::Scope scope(b_, prefix + "." + norm);
  return residual_norm(x, out, prefix + "." + norm);
}

Value Layers::encoder_layer(Value x, const std::string& prefix, const Sublayer& self_attention) {
  const Sublayer ffn = [&](Value rows) { return feed_forward(rows, prefix + ".ffn"); };
  x = add_norm(x, prefix, "self_attn", self_attention, "ln1");
  return add_norm(x, prefix, "ffn", ffn, "ln2");
}

Value Layers::decoder_layer(Value x, const std::string& prefix, const Sublayer& self_attention,
                            const Sublayer& cross_attention) {
  const Sublayer ffn = [&](Value rows) { return feed_forward(rows, prefix + ".ffn"); };
  x = add_norm(x, prefix, "self_attn", self_attention, "ln1");
  x = add_norm(x, prefix, "cross_attn", cross_attention, "ln2");
  return add_norm(x, prefix, "ffn", ffn, "ln3");
}

}  // namespace kiln::models
