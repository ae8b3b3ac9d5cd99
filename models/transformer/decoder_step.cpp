#include "models/transformer/decoder_step.h"

#include "models/transformer/attention.h"
#include "models/transformer/params.h"
#include "ops/assign.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/normalization.h"
#include "ops/shape_ops.h"

namespace kiln::models {
namespace {

const std::string kTokenCache = "token_cache";

std::string layer_prefix(int64_t layer) {
  std::string p = "dec.";
  p += std::to_string(layer);
  return p;
}

std::string cross_name(int64_t layer, const char* what) { return layer_prefix(layer) + ".cross_attn." + what; }
std::string cache_name(int64_t layer, const char* what) { return layer_prefix(layer) + ".self_attn." + what; }

// The cache with `update` written at position `pos` along `axis`, assigned to it
// when the step ends; returns the new value, which this step reads. Compiled,
// the write takes the cache's memory and copies in only this position's rows.
Value write_cache(Builder& b, Value cache, Value pos, Value update, int64_t axis) {
  const Value next = ops::update_slice(b, cache, update, pos, axis);
  ops::assign(b, cache, next);
  return next;
}

}  // namespace

std::vector<std::string> cross_attention_names(const TransformerConfig& cfg) {
  std::vector<std::string> names;
  for (int64_t i = 0; i < cfg.dec_layers; ++i) {
    names.push_back(cross_name(i, "keys"));
    names.push_back(cross_name(i, "values"));
  }
  return names;
}

std::vector<std::string> step_cache_names(const TransformerConfig& cfg) {
  std::vector<std::string> names{kTokenCache};
  for (int64_t i = 0; i < cfg.dec_layers; ++i) {
    names.push_back(cache_name(i, "key_cache"));
    names.push_back(cache_name(i, "value_cache"));
  }
  return names;
}

void output_cross_attention(Layers& l, Value memory_rows, int64_t batch) {
  Builder& b = l.builder();
  for (int64_t i = 0; i < l.config().dec_layers; ++i) {
    const std::string prefix = layer_prefix(i) + ".cross_attn";
    const Builder::Scope scope(b, prefix);
    for (const auto& [which, name] : {std::pair{"k", "keys"}, std::pair{"v", "values"}}) {
      const Value heads = project_heads(l, memory_rows, batch, prefix, which);
      b.graph().rename(heads, cross_name(i, name));
      b.output(heads);
    }
  }
}

Graph build_decoder_step_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t cache_len) {
  validate_shape(cfg, batch, src_len, cache_len);
  Graph g("transformer_decoder_step");
  Builder b(g);
  const Value token = b.input(kStepToken, {DType::i32, {batch, 1}});
  const Value pos = b.input(kStepPosition, {DType::i32, {}});
  const Value src = b.input("src", {DType::i32, {batch, src_len}});
  const int64_t heads = cfg.heads, head_dim = cfg.d_model / cfg.heads;
  std::vector<Value> cross;  // per layer: keys, values
  for (const std::string& name : cross_attention_names(cfg))
    cross.push_back(b.input(name, {DType::f32, {batch, heads, src_len, head_dim}}));
  const ModelParams params(b, cfg);
  Layers l(b, cfg, params, std::nullopt);

  const Value token_cache = b.state(kTokenCache, {DType::i32, {batch, cache_len}});
  Value self_mask, src_mask, x;
  {
    const Builder::Scope scope(b, "dec.mask");
    self_mask = position_padding_mask(b, write_cache(b, token_cache, pos, token, 1), pos, cfg.pad_id);
  }
  {
    const Builder::Scope scope(b, "enc.mask");
    src_mask = padding_mask(b, src, cfg.pad_id);
  }
  const TensorType cache_type{DType::f32, {batch, heads, cache_len, head_dim}};
  {
    const Builder::Scope scope(b, "dec.embed");
    x = l.embed_at(token, pos);  // rows f32[B, D]
  }
  for (int64_t i = 0; i < cfg.dec_layers; ++i) {
    const std::string p = layer_prefix(i);
    const Value key_cache = b.state(cache_name(i, "key_cache"), cache_type);
    const Value value_cache = b.state(cache_name(i, "value_cache"), cache_type);
    const auto self_attention = [&](Value rows) {
      const std::string prefix = p + ".self_attn";
      const Value q = project_heads(l, rows, batch, prefix, "q");
      const Value k = write_cache(b, key_cache, pos, project_heads(l, rows, batch, prefix, "k"), 2);
      const Value v = write_cache(b, value_cache, pos, project_heads(l, rows, batch, prefix, "v"), 2);
      return attend(l, q, k, v, self_mask, prefix);
    };
    const auto cross_attention = [&](Value rows) {
      const std::string prefix = p + ".cross_attn";
      return attend(l, project_heads(l, rows, batch, prefix, "q"), cross[2 * i], cross[2 * i + 1], src_mask, prefix);
    };
    x = l.decoder_layer(x, p, self_attention, cross_attention);
  }
  const Builder::Scope scope(b, "dec.output");
  const Value log_probs = ops::log_softmax(b, l.logits(x));
  g.rename(log_probs, "log_probs");
  b.output(log_probs);
  return g;
}

}  // namespace kiln::models
