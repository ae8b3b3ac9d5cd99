// A checkpoint's metadata: the input is the JSON object of the file's
// "__metadata__" (format, task, config, trainer), checked by checkpoint_from
// against the tensors of a small model, then the trainer state is read. What is
// accepted must round-trip: the config and trainer state written back read the same.
//
// Two keys steer the tensors instead: "fuzz.step" (a decimal i32) sets the step
// counter, "fuzz.nan" names a tensor whose first element becomes NaN.
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "fuzz/fuzz_targets.h"
#include "models/checkpoint.h"
#include "models/optimizer.h"
#include "models/train/trainer_state.h"
#include "models/transformer/transformer.h"

namespace kiln::fuzz {
namespace {

using namespace kiln::models;

// Every param of a two-dimension model, zero, and the step counter.
const std::map<std::string, Tensor>& model_tensors() {
  static const std::map<std::string, Tensor> tensors = [] {
    TransformerConfig c;
    c.name = "fuzz";
    c.vocab = 4, c.d_model = 2, c.heads = 1, c.d_ff = 2, c.enc_layers = 1, c.dec_layers = 1, c.max_len = 4;
    std::map<std::string, Tensor> out;
    for (const auto& [name, type] : param_types(c)) out.emplace(name, Tensor::zeros(type));
    out.emplace(kStepState, Tensor(Tensor::I32(0)));
    return out;
  }();
  return tensors;
}

// The metadata map of a JSON object of strings, or nullopt for any other input.
std::optional<std::map<std::string, std::string>> metadata_of(std::string_view bytes) {
  const auto j = nlohmann::json::parse(bytes, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) return std::nullopt;
    out[key] = value.get<std::string>();
  }
  return out;
}

void steer(const std::map<std::string, std::string>& metadata, std::map<std::string, Tensor>& tensors) {
  if (const auto it = metadata.find("fuzz.step"); it != metadata.end()) {
    int32_t step = 0;
    const std::string& text = it->second;
    if (std::from_chars(text.data(), text.data() + text.size(), step).ec == std::errc())
      tensors.at(kStepState) = Tensor(Tensor::I32(step));
  }
  if (const auto it = metadata.find("fuzz.nan"); it != metadata.end())
    if (const auto t = tensors.find(it->second); t != tensors.end() && t->second.dtype() == DType::f32)
      t->second.f32().flat(0) = NAN;
}

}  // namespace

Outcome fuzz_checkpoint_meta(std::string_view bytes) {
  const auto metadata = metadata_of(bytes);
  if (!metadata) return Outcome::rejected;
  SafetensorsFile contents{model_tensors(), *metadata};
  steer(*metadata, contents.tensors);
  Checkpoint ckpt;
  TrainerState state;
  try {
    ckpt = checkpoint_from(std::move(contents), "fuzz.safetensors");
    state = trainer_state_from_json(ckpt.trainer_state);
  } catch (const Error&) {
    return Outcome::rejected;
  }
  const std::string config = config_to_json(ckpt.config), trainer = trainer_state_to_json(state);
  if (config_to_json(config_from_json(config)) != config) throw FuzzFailure("the config does not round-trip");
  if (trainer_state_to_json(trainer_state_from_json(trainer)) != trainer)
    throw FuzzFailure("the trainer state does not round-trip");
  return Outcome::accepted;
}

}  // namespace kiln::fuzz
