#include "models/train/trainer_state.h"

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "engine/json_nesting.h"
#include "models/json_field.h"

namespace kiln::models {
namespace {

using nlohmann::json;

json points_to_json(const std::vector<EvalPoint>& points) {
  json a = json::array();
  for (const EvalPoint& p : points) a.push_back({p.step, p.loss});
  return a;
}

const json& field(const json& j, const char* key) { return json_field(j, key, "checkpoint trainer state"); }

template <class T>
T typed_field(const json& j, const char* key) {
  const json& v = field(j, key);
  const bool ok = std::is_floating_point_v<T> ? v.is_number()
                  : std::is_unsigned_v<T>     ? v.is_number_unsigned()
                                              : v.is_number_integer();
  if (!ok) throw Error(std::string("checkpoint trainer state: \"") + key + "\" has the wrong type");
  return v.get<T>();
}

std::vector<EvalPoint> points_from_json(const json& j, const char* key) {
  const json& a = field(j, key);
  if (!a.is_array()) throw Error(std::string("checkpoint trainer state: \"") + key + "\" must be an array");
  std::vector<EvalPoint> points;
  for (const json& p : a) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number_integer() || !p[1].is_number())
      throw Error(std::string("checkpoint trainer state: \"") + key + "\" holds a point that is not [step, loss]");
    points.push_back({p[0].get<int64_t>(), p[1].get<double>()});
  }
  return points;
}

}  // namespace

std::string trainer_state_to_json(const TrainerState& s) {
  nlohmann::ordered_json j;
  j["step"] = s.step;
  j["epoch"] = s.epoch;
  j["position"] = s.position;
  j["seed"] = s.seed;
  j["batch_tokens"] = s.batch_tokens;
  j["warmup"] = s.warmup;
  j["max_train_len"] = s.max_train_len;
  j["lr_factor"] = s.lr_factor;
  j["train_seconds"] = s.train_seconds;
  j["train_loss"] = points_to_json(s.train_losses);
  j["dev_loss"] = points_to_json(s.dev_losses);
  j["dev_bleu"] = points_to_json(s.dev_bleu);
  j["dev_chrf"] = points_to_json(s.dev_chrf);
  j["update_freq"] = s.update_freq;
  j["parts"] = s.parts;
  j["ranks"] = s.ranks;
  j["best_metric"] = s.best_metric;
  j["best_step"] = s.best_step;
  j["best_score"] = s.best_score;
  j["evals_since_best"] = s.evals_since_best;
  return j.dump();
}

TrainerState trainer_state_from_json(const std::string& text) {
  if (const auto at = json_deeper_than(text, 3))  // an object of lists of [step, value] (json_nesting.h)
    throw Error("checkpoint trainer state: JSON nests deeper than its 3 levels, at byte " + std::to_string(*at));
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(std::string("checkpoint trainer state: bad JSON: ") + e.what());
  }
  if (!j.is_object()) throw Error("checkpoint trainer state: expected a JSON object");
  TrainerState s;
  s.step = typed_field<int64_t>(j, "step");
  s.epoch = typed_field<int64_t>(j, "epoch");
  s.position = typed_field<int64_t>(j, "position");
  s.seed = typed_field<uint64_t>(j, "seed");
  s.batch_tokens = typed_field<int64_t>(j, "batch_tokens");
  s.warmup = typed_field<int64_t>(j, "warmup");
  s.max_train_len = typed_field<int64_t>(j, "max_train_len");
  s.lr_factor = typed_field<double>(j, "lr_factor");
  if (j.contains("train_seconds")) s.train_seconds = typed_field<double>(j, "train_seconds");  // since issue 10
  s.train_losses = points_from_json(j, "train_loss");
  s.dev_losses = points_from_json(j, "dev_loss");
  if (j.contains("best_metric")) {  // since issue 20
    s.dev_bleu = points_from_json(j, "dev_bleu");
    s.dev_chrf = points_from_json(j, "dev_chrf");
    const json& metric = field(j, "best_metric");
    if (!metric.is_string() || (metric != "loss" && metric != "bleu" && metric != "chrf"))
      throw Error("checkpoint trainer state: \"best_metric\" must be loss, bleu or chrf");
    s.best_metric = metric.get<std::string>();
    s.best_step = typed_field<int64_t>(j, "best_step");
    s.best_score = typed_field<double>(j, "best_score");
    s.evals_since_best = typed_field<int64_t>(j, "evals_since_best");
    s.update_freq = typed_field<int64_t>(j, "update_freq");
    if (s.best_step < -1 || s.evals_since_best < 0 || s.update_freq < 1 || s.update_freq > 1024)
      throw Error("checkpoint trainer state: \"best_step\", \"evals_since_best\" or \"update_freq\" out of range");
  }
  s.parts = s.update_freq;
  if (j.contains("parts")) {  // since issue 22
    s.parts = typed_field<int64_t>(j, "parts");
    s.ranks = typed_field<int64_t>(j, "ranks");
    if (s.ranks < 1 || s.parts < s.ranks || s.parts % s.ranks != 0 || s.parts / s.ranks != s.update_freq)
      throw Error("checkpoint trainer state: \"parts\" must be \"ranks\" times \"update_freq\"");
  }
  if (s.step < 0 || s.epoch < 0 || s.position < 0 || s.max_train_len < 0 || s.batch_tokens <= 0 || s.warmup <= 0 ||
      !(s.lr_factor > 0) || !(s.train_seconds >= 0))
    throw Error(
        "checkpoint trainer state: step, epoch and position must be >= "
        "0 and the batch size, warm-up and "
        "learning-rate factor positive, the training time not negative");
  return s;
}

}  // namespace kiln::models
