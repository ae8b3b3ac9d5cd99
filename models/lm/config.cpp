#include "models/lm/config.h"

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "engine/json_nesting.h"
#include "engine/tensor/memory_check.h"
#include "models/json_field.h"

namespace kiln::models {
namespace {

const char* const kOrigin = "language model config";

[[noreturn]] void fail(const std::string& msg) { throw Error(std::string(kOrigin) + ": " + msg); }

int64_t int_field(const nlohmann::json& j, const char* key) {
  const auto& v = json_field(j, key, kOrigin);
  if (!v.is_number_integer()) fail(std::string("\"") + key + "\" must be an integer");
  return v.get<int64_t>();
}

double real_field(const nlohmann::json& j, const char* key) {
  const auto& v = json_field(j, key, kOrigin);
  if (!v.is_number()) fail(std::string("\"") + key + "\" must be a number");
  return v.get<double>();
}

std::string string_field(const nlohmann::json& j, const char* key) {
  const auto& v = json_field(j, key, kOrigin);
  if (!v.is_string()) fail(std::string("\"") + key + "\" must be a string");
  return v.get<std::string>();
}

template <size_t N>
bool one_of(const std::string& v, const char* const (&choices)[N]) {
  return std::find(std::begin(choices), std::end(choices), v) != std::end(choices);
}

// f32 elements of the params and position tables, saturating.
uint64_t model_elements(const LmConfig& c) {
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const auto mul = [](uint64_t a, uint64_t b) {
    uint64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
  };
  const auto add = [](uint64_t a, uint64_t b) {
    uint64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
  };
  const uint64_t d = u(c.d_model);
  const uint64_t layer = add(mul(4, mul(d, d)), mul(2, mul(d, u(c.d_ff))));
  return add(add(mul(u(c.vocab), d), mul(u(c.layers), layer)), mul(u(c.max_len), d));
}

}  // namespace

std::string describe(const LmConfig& c) {
  return "(vocab " + std::to_string(c.vocab) + ", d_model " + std::to_string(c.d_model) + ", " +
         std::to_string(c.heads) + " heads, d_ff " + std::to_string(c.d_ff) + ", " + std::to_string(c.layers) +
         " layers, context " + std::to_string(c.context) + ", " + c.positions + " positions, " + c.norm + "-norm)";
}

std::string lm_config_to_json(const LmConfig& c) {
  nlohmann::ordered_json j;
  j["vocab"] = c.vocab;
  j["d_model"] = c.d_model;
  j["heads"] = c.heads;
  j["d_ff"] = c.d_ff;
  j["layers"] = c.layers;
  j["context"] = c.context;
  j["max_len"] = c.max_len;
  j["positions"] = c.positions;
  j["norm"] = c.norm;
  j["dropout"] = c.dropout;
  return j.dump();
}

LmConfig lm_config_from_json(const std::string& text) {
  if (const auto at = json_deeper_than(text, 1))
    fail("JSON nests deeper than a flat object, at byte " + std::to_string(*at));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("bad JSON: ") + e.what());
  }
  if (!j.is_object()) fail("expected a JSON object");
  LmConfig c;
  c.vocab = int_field(j, "vocab");
  c.d_model = int_field(j, "d_model");
  c.heads = int_field(j, "heads");
  c.d_ff = int_field(j, "d_ff");
  c.layers = int_field(j, "layers");
  c.context = int_field(j, "context");
  c.max_len = int_field(j, "max_len");
  c.positions = string_field(j, "positions");
  c.norm = string_field(j, "norm");
  c.dropout = real_field(j, "dropout");
  validate(c);
  return c;
}

void validate(const LmConfig& c) {
  const auto require = [](bool ok, const std::string& msg) {
    if (!ok) fail(msg);
  };
  const auto positive = [&](int64_t v, const char* key) {
    require(v > 0, std::string("\"") + key + "\" must be positive, got " + std::to_string(v));
  };
  positive(c.vocab, "vocab");
  positive(c.d_model, "d_model");
  positive(c.heads, "heads");
  positive(c.d_ff, "d_ff");
  positive(c.layers, "layers");
  positive(c.context, "context");
  positive(c.max_len, "max_len");
  require(one_of(c.positions, kLmPositions),
          "\"positions\" must be learned, sinusoidal or rope, got \"" + c.positions + "\"");
  require(one_of(c.norm, kLmNorms), "\"norm\" must be pre or post, got \"" + c.norm + "\"");
  require(c.d_model % c.heads == 0, "\"d_model\" (" + std::to_string(c.d_model) +
                                        ") must be a multiple of \"heads\" (" + std::to_string(c.heads) + ")");
  if (c.positions == "rope")
    require((c.d_model / c.heads) % 2 == 0,
            "rope rotates pairs of dims: the head size d_model / heads must be even, got " +
                std::to_string(c.d_model / c.heads));
  if (c.positions == "sinusoidal")
    require(c.d_model % 2 == 0,
            "sinusoidal positions pair dims: \"d_model\" must be even, got " + std::to_string(c.d_model));
  require(c.context <= c.max_len, "\"context\" (" + std::to_string(c.context) + ") must be at most \"max_len\" (" +
                                      std::to_string(c.max_len) + ")");
  if (c.positions == "learned")
    require(c.max_len == c.context,
            "learned positions have a row per trained position: \"max_len\" must equal "
            "\"context\" (" +
                std::to_string(c.context) + "), got " + std::to_string(c.max_len));
  require(c.dropout >= 0 && c.dropout < 1, "\"dropout\" must be in [0, 1), got " + std::to_string(c.dropout));
  checked_bytes(model_elements(c), sizeof(float),
                std::string(kOrigin) + ": a model of d_model " + std::to_string(c.d_model) + ", " +
                    std::to_string(c.layers) + " layers and d_ff " + std::to_string(c.d_ff));
}

}  // namespace kiln::models
