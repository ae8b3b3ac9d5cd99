#include "models/transformer/transformer.h"

#include "models/transformer/attention.h"
#include "models/transformer/decoder_step.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "models/transformer/layers.h"
#include "models/transformer/params.h"
#include "ops/loss.h"
#include "ops/normalization.h"
#include "ops/shape_ops.h"

namespace kiln::models {
namespace {

TensorType tokens_type(int64_t batch, int64_t len) { return {DType::i32, {batch, len}}; }

// The source's padding mask, in scope enc.mask.
Value source_mask(Builder& b, Value src, int32_t pad_id) {
  const Builder::Scope scope(b, "enc.mask");
  return padding_mask(b, src, pad_id);
}

// Encoder stack: src i32[B,S] -> memory rows f32[B*S, D].
Value encode(Layers& l, Value src, Value src_mask, int64_t batch) {
  Value x;
  {
    const Builder::Scope scope(l.builder(), "enc.embed");
    x = l.embed(src);
  }
  for (int64_t i = 0; i < l.config().enc_layers; ++i) {
    const std::string p = "enc." + std::to_string(i);
    x = l.encoder_layer(
        x, p, [&](Value rows) { return multi_head_attention(l, rows, rows, src_mask, batch, p + ".self_attn"); });
  }
  return x;
}

// Decoder stack: rows f32[B*T, D], before the tied pre-softmax projection.
Value decode(Layers& l, Value memory, Value src_mask, Value tgt_in, int64_t batch) {
  Value self_mask, x;
  {
    const Builder::Scope scope(l.builder(), "dec.mask");
    self_mask = causal_padding_mask(l.builder(), tgt_in, l.config().pad_id);
  }
  {
    const Builder::Scope scope(l.builder(), "dec.embed");
    x = l.embed(tgt_in);
  }
  for (int64_t i = 0; i < l.config().dec_layers; ++i) {
    const std::string p = "dec." + std::to_string(i);
    x = l.decoder_layer(
        x, p, [&](Value rows) { return multi_head_attention(l, rows, rows, self_mask, batch, p + ".self_attn"); },
        [&](Value rows) { return multi_head_attention(l, rows, memory, src_mask, batch, p + ".cross_attn"); });
  }
  return x;
}

// The dropout key of a training graph: %step and, for a part of an update's
// batch, input %first_example (layers.h).
DropoutKey dropout_key(Builder& b, bool part, int64_t batch) {
  DropoutKey key{b.state(kStepState, {DType::i32, {}}), std::nullopt, 0};
  if (part) {
    key.first_example = b.input(kFirstExampleInput, {DType::i32, {}});
    key.examples = batch;
  }
  return key;
}

// Declares inputs, params and (when training) %step, and emits the label-smoothed
// loss, named "loss"; returns it.
Value emit_loss(Builder& b, const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len,
                bool training, bool part = false) {
  validate_shape(cfg, batch, src_len, tgt_len);
  const Value src = b.input("src", tokens_type(batch, src_len));
  const Value tgt_in = b.input("tgt_in", tokens_type(batch, tgt_len));
  const Value tgt_out = b.input("tgt_out", tokens_type(batch, tgt_len));
  const ModelParams params(b, cfg);
  std::optional<DropoutKey> key;
  if (training) key = dropout_key(b, part, batch);
  Layers l(b, cfg, params, key);
  const Value src_mask = source_mask(b, src, cfg.pad_id);
  const Value memory = encode(l, src, src_mask, batch);
  const Value rows = decode(l, memory, src_mask, tgt_in, batch);
  const Builder::Scope scope(b, "loss");
  const Value labels = ops::reshape(b, tgt_out, {batch * tgt_len});
  const Value loss =
      cfg.fused_loss
          ? ops::linear_cross_entropy(b, rows, params.at("embed"), labels, cfg.label_smoothing, cfg.pad_id).first
          : ops::cross_entropy(b, l.logits(rows), labels, cfg.label_smoothing, cfg.pad_id);
  b.graph().rename(loss, "loss");
  return loss;
}

}  // namespace

Graph build_train_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len,
                        const AdamOptions& adam) {
  Graph g("transformer_train");
  Builder b(g);
  const Value loss = emit_loss(b, cfg, batch, src_len, tgt_len, true, adam.update_freq > 1 || adam.allreduce);
  append_adam(g, loss, adam);
  return g;
}

Graph build_accumulate_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len) {
  Graph g("transformer_accumulate");
  Builder b(g);
  append_gradient_accumulation(g, emit_loss(b, cfg, batch, src_len, tgt_len, true, true));
  return g;
}

Graph build_loss_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len, bool training) {
  Graph g("transformer_loss");
  Builder b(g);
  b.output(emit_loss(b, cfg, batch, src_len, tgt_len, training));
  return g;
}

Graph build_encoder_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len) {
  validate_shape(cfg, batch, src_len, 1);
  Graph g("transformer_encoder");
  Builder b(g);
  const Value src = b.input("src", tokens_type(batch, src_len));
  const ModelParams params(b, cfg);
  Layers l(b, cfg, params, std::nullopt);
  const Value rows = encode(l, src, source_mask(b, src, cfg.pad_id), batch);
  Value memory;
  {
    const Builder::Scope scope(b, "enc.output");
    memory = ops::reshape(b, rows, {batch, src_len, cfg.d_model});
  }
  g.rename(memory, "memory");
  b.output(memory);
  output_cross_attention(l, rows, batch);
  return g;
}

Graph build_decoder_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len) {
  validate_shape(cfg, batch, src_len, tgt_len);
  Graph g("transformer_decoder");
  Builder b(g);
  const Value memory = b.input("memory", {DType::f32, {batch, src_len, cfg.d_model}});
  const Value src = b.input("src", tokens_type(batch, src_len));
  const Value tgt_in = b.input("tgt_in", tokens_type(batch, tgt_len));
  const ModelParams params(b, cfg);
  Layers l(b, cfg, params, std::nullopt);
  Value memory_rows;
  {
    const Builder::Scope scope(b, "dec.memory");
    memory_rows = ops::reshape(b, memory, {batch * src_len, cfg.d_model});
  }
  const Value rows = decode(l, memory_rows, source_mask(b, src, cfg.pad_id), tgt_in, batch);
  const Builder::Scope scope(b, "dec.output");
  const Value log_probs = ops::reshape(b, ops::log_softmax(b, l.logits(rows)), {batch, tgt_len, cfg.vocab});
  g.rename(log_probs, "log_probs");
  b.output(log_probs);
  return g;
}

Graph build_attention_graph(const TransformerConfig& cfg, int64_t src_len, int64_t tgt_len) {
  validate_shape(cfg, 1, src_len, tgt_len);
  Graph g("transformer_attention");
  Builder b(g);
  const Value src = b.input("src", tokens_type(1, src_len));
  const Value tgt_in = b.input("tgt_in", tokens_type(1, tgt_len));
  const ModelParams params(b, cfg);
  Layers l(b, cfg, params, std::nullopt);
  l.keep_attention_weights();
  const Value src_mask = source_mask(b, src, cfg.pad_id);
  const Value rows = decode(l, encode(l, src, src_mask, 1), src_mask, tgt_in, 1);
  const Builder::Scope scope(b, "dec.output");
  const Value log_probs = ops::reshape(b, ops::log_softmax(b, l.logits(rows)), {1, tgt_len, cfg.vocab});
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
