#include "models/checkpoint.h"

#include <cmath>
#include <filesystem>
#include <optional>
#include <sstream>

#include "engine/ir/error.h"
#include "engine/safetensors.h"
#include "models/model.h"
#include "models/optimizer.h"
#include "models/transformer/transformer.h"

namespace kiln::models {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "kiln-checkpoint-1";

// "'small' (vocab 8000, d_model 256, 4 heads, d_ff 1024, 3+3 layers, max_len 256)"
std::string describe(const TransformerConfig& c) {
  std::ostringstream s;
  s << "'" << c.name << "' (vocab " << c.vocab << ", d_model " << c.d_model << ", " << c.heads << " heads, d_ff "
    << c.d_ff << ", " << c.enc_layers << "+" << c.dec_layers << " layers, max_len " << c.max_len << ")";
  return s.str();
}

// The first non-finite element of an f32 tensor, if any.
std::optional<std::pair<size_t, float>> first_non_finite(const Tensor& t) {
  if (t.dtype() != DType::f32) return std::nullopt;
  const auto& a = t.f32();
  for (size_t i = 0; i < a.size(); ++i)
    if (!std::isfinite(a.data()[i])) return std::pair{i, a.data()[i]};
  return std::nullopt;
}

// "param 'embed' is f32[11,256], expected f32[11,128]" for the first param of
// `types` that `tensors` lacks or holds with another type.
std::optional<std::string> first_param_mismatch(const std::map<std::string, Tensor>& tensors,
                                                const std::vector<std::pair<std::string, TensorType>>& types) {
  for (const auto& [name, type] : types) {
    const auto it = tensors.find(name);
    if (it == tensors.end()) return "it has no param '" + name + "' (expected " + type_str(type) + ")";
    if (it->second.type() != type)
      return "param '" + name + "' is " + type_str(it->second.type()) + ", expected " + type_str(type);
  }
  return std::nullopt;
}

// The config against the tensors the file holds, before its param list is built
// (every layer has params, so a config with more layers than the file has tensors
// is corrupt, however many it claims); then the step counter and every f32 value.
void check_contents(const Checkpoint& ckpt, const std::string& file) {
  const auto corrupt = [&](const std::string& what) {
    throw Error(file + ": corrupt checkpoint: " + what);
  };
  if (ckpt.model == "transformer") {
    const TransformerConfig& cfg = ckpt.config;
    const auto tensors = static_cast<int64_t>(ckpt.tensors.size());
    if (cfg.enc_layers > tensors || cfg.dec_layers > tensors)
      corrupt("its config " + describe(cfg) + " has more layers than the file's " + std::to_string(tensors) +
              " tensors");
    if (const auto mismatch = first_param_mismatch(ckpt.tensors, param_types(cfg)))
      corrupt("its tensors do not fit its own config " + describe(cfg) + ": " + *mismatch);
  } else {
    const ModelKind& kind = model_kind(ckpt.model);
    if (const auto mismatch = first_param_mismatch(ckpt.tensors, kind.param_types(ckpt.model_config)))
      corrupt("its tensors do not fit its own " + ckpt.model + " config " + kind.describe(ckpt.model_config) + ": " +
              *mismatch);
  }
  if (const auto step = ckpt.tensors.find(kStepState); step != ckpt.tensors.end()) {
    const Tensor& t = step->second;
    if (!(t.type() == TensorType{DType::i32, {}}))
      corrupt("the step counter '" + kStepState + "' is " + type_str(t.type()) + ", not i32[]");
    if (const int32_t step_count = t.i32()(); step_count < 0)
      corrupt("the step counter '" + kStepState + "' is negative (" + std::to_string(step_count) + ")");
  }
  for (const auto& [name, t] : ckpt.tensors)
    if (const auto bad = first_non_finite(t)) {
      std::ostringstream s;
      s << "tensor '" << name << "' has the non-finite value " << bad->second << " at element " << bad->first;
      corrupt(s.str());
    }
}

std::string config_json(const Checkpoint& ckpt) {
  return ckpt.model == "transformer" ? config_to_json(ckpt.config) : ckpt.model_config;
}

const std::string& required(const std::map<std::string, std::string>& metadata, const std::string& key,
                            const std::string& file) {
  const auto it = metadata.find(key);
  if (it == metadata.end()) throw Error(file + ": not a kiln checkpoint: its metadata lacks \"" + key + "\"");
  return it->second;
}

}  // namespace

std::string checkpoint_file(const std::string& dir) { return (fs::path(dir) / "checkpoint.safetensors").string(); }

void save_checkpoint(const std::string& dir, const Checkpoint& ckpt, const std::vector<FileBytes>& beside) {
  for (const auto& [name, t] : ckpt.tensors)
    if (const auto bad = first_non_finite(t)) {
      std::ostringstream s;
      s << "checkpoint " << dir << " not saved: tensor '" << name << "' has the non-finite value " << bad->second
        << " at element " << bad->first << " (the training diverged); the previous checkpoint is kept";
      throw Error(s.str());
    }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create the checkpoint directory " + dir + ": " + ec.message());
  const SafetensorsBytes bytes = safetensors_bytes(checkpoint_file(dir), ckpt.tensors,
                                                  {{"format", kFormat},
                                                   {"model", ckpt.model},
                                                   {"task", ckpt.task},
                                                   {"config", config_json(ckpt)},
                                                   {"trainer", ckpt.trainer_state}});
  std::vector<FilePieces> files{{checkpoint_file(dir), bytes.pieces()}};
  for (const FileBytes& f : beside) files.push_back({f.path, {f.bytes, f.data}});
  write_files_atomically(files);
}

Checkpoint params_only(const Checkpoint& ckpt) {
  Checkpoint out = ckpt;
  out.tensors.clear();
  for (const auto& [name, type] : model_kind(ckpt.model).param_types(config_json(ckpt)))
    out.tensors.emplace(name, ckpt.tensors.at(name));
  if (const auto step = ckpt.tensors.find(kStepState); step != ckpt.tensors.end()) out.tensors.insert(*step);
  return out;
}

Checkpoint load_checkpoint(const std::string& dir) {
  Checkpoint ckpt = load_any_checkpoint(dir);
  if (ckpt.model != "transformer")
    throw Error(dir + " holds a checkpoint of model '" + ckpt.model + "', not of the Transformer this command takes");
  return ckpt;
}

Checkpoint load_any_checkpoint(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw Error("checkpoint directory " + dir + " does not exist");
  if (!fs::is_directory(dir, ec)) throw Error(dir + " is not a checkpoint directory");
  const std::string file = checkpoint_file(dir);
  if (!fs::exists(file, ec)) throw Error("checkpoint directory " + dir + " holds no checkpoint.safetensors");

  SafetensorsFile f;
  try {
    f = load_safetensors(file);
  } catch (const Error& e) {
    throw Error(std::string("corrupt or truncated checkpoint: ") + e.what());
  }
  return checkpoint_from(std::move(f), file);
}

Checkpoint checkpoint_from(SafetensorsFile f, const std::string& file) {
  const std::string& format = required(f.metadata, "format", file);
  if (format != kFormat)
    throw Error(file + ": checkpoint format '" + format + "' is not the one this kiln reads ('" + kFormat + "')");

  Checkpoint ckpt;
  if (const auto model = f.metadata.find("model"); model != f.metadata.end()) ckpt.model = model->second;
  ckpt.task = required(f.metadata, "task", file);
  if (ckpt.task.empty()) throw Error(file + ": the checkpoint names no task");
  try {
    model_kind(ckpt.model);  // a kind this kiln knows
    ckpt.model_config = required(f.metadata, "config", file);
    // Sizes checked against memory before any param list is built.
    if (ckpt.model == "transformer")
      ckpt.config = config_from_json(ckpt.model_config);
    else
      model_kind(ckpt.model).describe(ckpt.model_config);
  } catch (const Error& e) {
    throw Error(file + ": bad model config: " + e.what());
  }
  ckpt.trainer_state = required(f.metadata, "trainer", file);
  ckpt.tensors = std::move(f.tensors);
  check_contents(ckpt, file);
  return ckpt;
}

void check_matches(const Checkpoint& ckpt, const TransformerConfig& expected) {
  if (const auto mismatch = first_param_mismatch(ckpt.tensors, param_types(expected)))
    throw Error("the checkpoint was trained with config " + describe(ckpt.config) + ", not " + describe(expected) +
                ": " + *mismatch);
}

}  // namespace kiln::models
