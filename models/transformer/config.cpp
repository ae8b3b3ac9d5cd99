#include "models/transformer/config.h"

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "engine/json_nesting.h"
#include "engine/tensor/memory_check.h"
#include "models/json_field.h"

namespace kiln::models {

TransformerConfig preset_config(const std::string& name) {
  TransformerConfig c;
  c.name = name;
  if (name == "tiny") {
    c.d_model = 128, c.heads = 4, c.d_ff = 512, c.enc_layers = 2, c.dec_layers = 2;
  } else if (name == "small") {
    c.d_model = 256, c.heads = 4, c.d_ff = 1024, c.enc_layers = 3, c.dec_layers = 3;
  } else if (name == "base") {
    c.d_model = 512, c.heads = 8, c.d_ff = 2048, c.enc_layers = 6, c.dec_layers = 6;
  } else {
    throw Error("unknown Transformer config '" + name + "' (choices: tiny, small, base)");
  }
  return c;
}

std::string config_to_json(const TransformerConfig& c) {
  // nlohmann's ordered_json keeps the fields in declaration order for readers.
  nlohmann::ordered_json j;
  j["name"] = c.name;
  j["vocab"] = c.vocab;
  j["d_model"] = c.d_model;
  j["heads"] = c.heads;
  j["d_ff"] = c.d_ff;
  j["enc_layers"] = c.enc_layers;
  j["dec_layers"] = c.dec_layers;
  j["dropout"] = c.dropout;
  j["max_len"] = c.max_len;
  j["label_smoothing"] = c.label_smoothing;
  j["pad_id"] = c.pad_id;
  j["fused_loss"] = c.fused_loss;
  return j.dump();
}

namespace {

const nlohmann::json& config_field(const nlohmann::json& j, const char* key) {
  return json_field(j, key, "Transformer config");
}

int64_t int_field(const nlohmann::json& j, const char* key) {
  const auto& v = config_field(j, key);
  if (!v.is_number_integer()) throw Error(std::string("Transformer config: \"") + key + "\" must be an integer");
  return v.get<int64_t>();
}

double real_field(const nlohmann::json& j, const char* key) {
  const auto& v = config_field(j, key);
  if (!v.is_number()) throw Error(std::string("Transformer config: \"") + key + "\" must be a number");
  return v.get<double>();
}

// a * b and a + b of non-negative sizes, saturating at UINT64_MAX.
uint64_t mul_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t add_sat(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

// At least this many f32 elements make the model's params and positional
// encodings: the embeddings, each layer's attention and feed-forward matrices,
// and the encodings (biases, norms and cross-attention left out).
uint64_t model_elements_lower_bound(const TransformerConfig& c) {
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const uint64_t d = u(c.d_model);
  const uint64_t layer = add_sat(mul_sat(4, mul_sat(d, d)), mul_sat(2, mul_sat(d, u(c.d_ff))));
  uint64_t n = mul_sat(u(c.vocab), d);
  n = add_sat(n, mul_sat(add_sat(u(c.enc_layers), u(c.dec_layers)), layer));
  return add_sat(n, mul_sat(u(c.max_len), d));
}

}  // namespace

TransformerConfig config_from_json(const std::string& text) {
  if (const auto at = json_deeper_than(text, 1))  // a flat object (json_nesting.h)
    throw Error("Transformer config: JSON nests deeper than a flat object, at byte " + std::to_string(*at));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("Transformer config: bad JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error("Transformer config: expected a JSON object");
  TransformerConfig c;
  const auto& name = config_field(j, "name");
  if (!name.is_string()) throw Error("Transformer config: \"name\" must be a string");
  c.name = name.get<std::string>();
  c.vocab = int_field(j, "vocab");
  c.d_model = int_field(j, "d_model");
  c.heads = int_field(j, "heads");
  c.d_ff = int_field(j, "d_ff");
  c.enc_layers = int_field(j, "enc_layers");
  c.dec_layers = int_field(j, "dec_layers");
  c.dropout = real_field(j, "dropout");
  c.max_len = int_field(j, "max_len");
  c.label_smoothing = real_field(j, "label_smoothing");
  const int64_t pad = int_field(j, "pad_id");
  if (pad < 0 || pad > INT32_MAX) throw Error("Transformer config: \"pad_id\" out of range");
  c.pad_id = static_cast<int32_t>(pad);
  if (j.contains("fused_loss")) {  // checkpoints written before it have none: the default
    if (!j["fused_loss"].is_boolean()) throw Error("Transformer config: \"fused_loss\" must be true or false");
    c.fused_loss = j["fused_loss"].get<bool>();
  }
  validate(c);
  return c;
}

bool same_architecture(const TransformerConfig& a, const TransformerConfig& b) {
  return a.vocab == b.vocab && a.d_model == b.d_model && a.heads == b.heads && a.d_ff == b.d_ff &&
         a.enc_layers == b.enc_layers && a.dec_layers == b.dec_layers && a.max_len == b.max_len;
}

void validate(const TransformerConfig& c) {
  auto require = [](bool ok, const std::string& msg) {
    if (!ok) throw Error("Transformer config: " + msg);
  };
  require(c.vocab >= 4, "vocab must be at least 4, got " + std::to_string(c.vocab));
  require(c.d_model > 0, "d_model must be positive, got " + std::to_string(c.d_model));
  require(c.d_model % 2 == 0, "d_model must be even (sinusoidal encodings), got " + std::to_string(c.d_model));
  require(c.heads > 0, "heads must be positive, got " + std::to_string(c.heads));
  require(c.d_model % c.heads == 0,
          "d_model (" + std::to_string(c.d_model) + ") must be a multiple of heads (" + std::to_string(c.heads) + ")");
  require(c.d_ff > 0, "d_ff must be positive, got " + std::to_string(c.d_ff));
  require(c.enc_layers > 0, "enc_layers must be positive, got " + std::to_string(c.enc_layers));
  require(c.dec_layers > 0, "dec_layers must be positive, got " + std::to_string(c.dec_layers));
  require(c.max_len > 0, "max_len must be positive, got " + std::to_string(c.max_len));
  require(c.dropout >= 0 && c.dropout < 1, "dropout must be in [0, 1), got " + std::to_string(c.dropout));
  require(c.label_smoothing >= 0 && c.label_smoothing < 1,
          "label_smoothing must be in [0, 1), got " + std::to_string(c.label_smoothing));
  require(c.pad_id >= 0 && c.pad_id < c.vocab, "pad_id must be in [0, vocab), got " + std::to_string(c.pad_id));
  std::string model = "Transformer config: a model of vocab " + std::to_string(c.vocab);
  model += ", d_model " + std::to_string(c.d_model);
  model += ", d_ff " + std::to_string(c.d_ff);
  model += ", " + std::to_string(c.enc_layers) + "+" + std::to_string(c.dec_layers);
  model += " layers and max_len " + std::to_string(c.max_len);
  checked_bytes(model_elements_lower_bound(c), sizeof(float), model);
}

void validate_shape(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len) {
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

}  // namespace kiln::models
