#include "models/transformer/transformer.h"

#include "engine/ir/error.h"
#include "models/transformer/attention.h"
#include "models/transformer/layers.h"
#include "models/transformer/params.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/shape_ops.h"

namespace kiln::models {
namespace {

TensorType tokens_type(int64_t batch, int64_t len) { return {DType::i32, {batch, len}}; }

void check_shape(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len) {
  validate(cfg);
  auto positive = [](int64_t v, const char* what) {
    if (v <= 0) throw Error(std::string("Transformer: ") + what + " must be positive, got " + std::to_string(v));
  };
  positive(batch, "batch");
  positive(src_len, "source length");
  positive(tgt_len, "target length");
  for (int64_t len : {src_len, tgt_len})
    if (len > cfg.max_len)
      throw Error("Transformer: sequence length " + std::to_string(len) + " exceeds the config's max_len " +
                  std::to_string(cfg.max_len));
}

// Encoder stack: src i32[B,S] -> memory rows f32[B*S, D].
Value encode(Layers& l, Value src, Value src_mask, int64_t batch) {
  Value x = l.embed(src);
  for (int64_t i = 0; i < l.config().enc_layers; ++i) {
    const std::string p = "enc." + std::to_string(i);
    x = l.residual_norm(x, multi_head_attention(l, x, x, src_mask, batch, p + ".self_attn"), p + ".ln1");
    x = l.residual_norm(x, l.feed_forward(x, p + ".ffn"), p + ".ln2");
  }
  return x;
}

// Decoder stack and the tied pre-softmax projection: logits rows f32[B*T, V].
Value decode_logits(Layers& l, Value memory, Value src_mask, Value tgt_in, int64_t batch) {
  Builder& b = l.builder();
  const Value self_mask = causal_padding_mask(b, tgt_in, l.config().pad_id);
  Value x = l.embed(tgt_in);
  for (int64_t i = 0; i < l.config().dec_layers; ++i) {
    const std::string p = "dec." + std::to_string(i);
    x = l.residual_norm(x, multi_head_attention(l, x, x, self_mask, batch, p + ".self_attn"), p + ".ln1");
    x = l.residual_norm(x, multi_head_attention(l, x, memory, src_mask, batch, p + ".cross_attn"), p + ".ln2");
    x = l.residual_norm(x, l.feed_forward(x, p + ".ffn"), p + ".ln3");
  }
  return ops::matmul(b, x, l.param("embed"), false, true);
}

// Declares inputs, params and (when training) %step, and emits the label-smoothed
// loss, named "loss"; returns it.
Value emit_loss(Builder& b, const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len,
                bool training) {
  check_shape(cfg, batch, src_len, tgt_len);
  const Value src = b.input("src", tokens_type(batch, src_len));
  const Value tgt_in = b.input("tgt_in", tokens_type(batch, tgt_len));
  const Value tgt_out = b.input("tgt_out", tokens_type(batch, tgt_len));
  const ModelParams params(b, cfg);
  std::optional<Value> step;
  if (training) step = b.state(kStepState, {DType::i32, {}});
  Layers l(b, cfg, params, step);
  const Value src_mask = padding_mask(b, src, cfg.pad_id);
  const Value memory = encode(l, src, src_mask, batch);
  const Value logits = decode_logits(l, memory, src_mask, tgt_in, batch);
  const Value labels = ops::reshape(b, tgt_out, {batch * tgt_len});
  const Value loss = ops::cross_entropy(b, logits, labels, cfg.label_smoothing, cfg.pad_id);
  b.graph().rename(loss, "loss");
  return loss;
}

}  // namespace

Graph build_train_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len,
                        const AdamOptions& adam) {
  Graph g("transformer_train");
  Builder b(g);
  const Value loss = emit_loss(b, cfg, batch, src_len, tgt_len, true);
  append_adam(g, loss, adam);
  return g;
}

Graph build_loss_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len, bool training) {
  Graph g("transformer_loss");
  Builder b(g);
  b.output(emit_loss(b, cfg, batch, src_len, tgt_len, training));
  return g;
}

Graph build_encoder_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len) {
  check_shape(cfg, batch, src_len, 1);
  Graph g("transformer_encoder");
  Builder b(g);
  const Value src = b.input("src", tokens_type(batch, src_len));
  const ModelParams params(b, cfg);
  Layers l(b, cfg, params, std::nullopt);
  const Value rows = encode(l, src, padding_mask(b, src, cfg.pad_id), batch);
  const Value memory = ops::reshape(b, rows, {batch, src_len, cfg.d_model});
  g.rename(memory, "memory");
  b.output(memory);
  return g;
}

Graph build_decoder_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len) {
  check_shape(cfg, batch, src_len, tgt_len);
  Graph g("transformer_decoder");
  Builder b(g);
  const Value memory = b.input("memory", {DType::f32, {batch, src_len, cfg.d_model}});
  const Value src = b.input("src", tokens_type(batch, src_len));
  const Value tgt_in = b.input("tgt_in", tokens_type(batch, tgt_len));
  const ModelParams params(b, cfg);
  Layers l(b, cfg, params, std::nullopt);
  const Value memory_rows = ops::reshape(b, memory, {batch * src_len, cfg.d_model});
  const Value logits = decode_logits(l, memory_rows, padding_mask(b, src, cfg.pad_id), tgt_in, batch);
  const Value log_probs = ops::reshape(b, ops::log_softmax(b, logits), {batch, tgt_len, cfg.vocab});
  g.rename(log_probs, "log_probs");
  b.output(log_probs);
  return g;
}

std::vector<std::pair<std::string, TensorType>> param_types(const TransformerConfig& cfg) {
  std::vector<std::pair<std::string, TensorType>> out;
  for (const ParamSpec& s : param_specs(cfg)) out.emplace_back(s.name, s.type);
  return out;
}

}  // namespace kiln::models
