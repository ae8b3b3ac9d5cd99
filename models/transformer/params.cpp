#include "models/transformer/params.h"

#include <cmath>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

TensorType f32(Shape shape) { return {DType::f32, std::move(shape)}; }
Attrs init(const std::string& scheme) { return {{"init", scheme}}; }

void add_linear(std::vector<ParamSpec>& out, const std::string& prefix, const std::string& w, const std::string& bias,
                int64_t in, int64_t units) {
  out.push_back({prefix + "." + w, f32({in, units}), init("glorot")});
  out.push_back({prefix + "." + bias, f32({units}), init("zeros")});
}

void add_attention(std::vector<ParamSpec>& out, const std::string& prefix, int64_t d) {
  for (const char* p : {"q", "k", "v", "o"}) add_linear(out, prefix, std::string("w") + p, std::string("b") + p, d, d);
}

void add_layer_norm(std::vector<ParamSpec>& out, const std::string& prefix, int64_t d) {
  out.push_back({prefix + ".gamma", f32({d}), init("ones")});
  out.push_back({prefix + ".beta", f32({d}), init("zeros")});
}

void add_ffn(std::vector<ParamSpec>& out, const std::string& prefix, int64_t d, int64_t d_ff) {
  add_linear(out, prefix, "w1", "b1", d, d_ff);
  add_linear(out, prefix, "w2", "b2", d_ff, d);
}

}  // namespace

std::vector<ParamSpec> param_specs(const TransformerConfig& cfg) {
  validate(cfg);
  const int64_t d = cfg.d_model;
  std::vector<ParamSpec> out;
  // N(0, d^-1/2) as tensor2tensor and the Annotated Transformer: scaled by sqrt(d)
  // at the input the embeddings have unit variance, and the tied output
  // projection starts with logits of unit variance.
  out.push_back({"embed", f32({cfg.vocab, d}), {{"init", std::string("normal")}, {"std", std::pow(d, -0.5)}}});
  for (int64_t l = 0; l < cfg.enc_layers; ++l) {
    const std::string p = "enc." + std::to_string(l);
    add_attention(out, p + ".self_attn", d);
    add_layer_norm(out, p + ".ln1", d);
    add_ffn(out, p + ".ffn", d, cfg.d_ff);
    add_layer_norm(out, p + ".ln2", d);
  }
  for (int64_t l = 0; l < cfg.dec_layers; ++l) {
    const std::string p = "dec." + std::to_string(l);
    add_attention(out, p + ".self_attn", d);
    add_layer_norm(out, p + ".ln1", d);
    add_attention(out, p + ".cross_attn", d);
    add_layer_norm(out, p + ".ln2", d);
    add_ffn(out, p + ".ffn", d, cfg.d_ff);
    add_layer_norm(out, p + ".ln3", d);
  }
  return out;
}

ModelParams::ModelParams(Builder& b, const TransformerConfig& cfg) {
  for (ParamSpec& s : param_specs(cfg)) params_.emplace(s.name, b.param(s.name, s.type, std::move(s.attrs)));
  pos_enc_ = b.state(kPosEncState, f32({cfg.max_len, cfg.d_model}), init("sinusoidal"));
}

Value ModelParams::at(const std::string& name) const {
  const auto it = params_.find(name);
  if (it == params_.end()) throw Error("Transformer: no param named '" + name + "'");
  return it->second;
}

}  // namespace kiln::models
