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

Layers::Layers(Builder& b, const TransformerConfig& cfg, const ModelParams& params, std::optional<Value> dropout_key)
    : b_(b), cfg_(cfg), params_(params), dropout_key_(dropout_key) {}

Value Layers::scalar(double v) { return ops::fill(b_, {}, v); }

Value Layers::dropout(Value x) {
  if (!dropout_key_ || cfg_.dropout == 0) return x;
  return ops::dropout(b_, x, *dropout_key_, cfg_.dropout, next_dropout_seed_++);
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
  const Shape& shape = b_.type(tokens).shape;  // [B, L]
  const int64_t len = shape.at(1), d = cfg_.d_model;
  const Value rows = ops::gather(b_, param("embed"), ops::reshape(b_, tokens, {shape[0] * len}));  // [B*L, D]
  const Value scaled = ops::mul(b_, rows, scalar(std::sqrt(static_cast<double>(d))));
  const Value positions = ops::slice(b_, params_.pos_enc(), {0}, {0}, {len});  // [L, D]
  const Value sum = ops::add(b_, ops::reshape(b_, scaled, {shape[0], len, d}), positions);
  return dropout(ops::reshape(b_, sum, {shape[0] * len, d}));
}

}  // namespace kiln::models
