#include "models/best_checkpoints.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/checkpoint_average.h"

namespace kiln::models {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path snapshots_root(const std::string& dir) { return fs::path(dir) / "best-snapshots"; }

struct Kept {
  int64_t step;
  double score;
};

// scores.json: {"metric": "bleu", "kept": [[step, score], ...]} best first.
std::vector<Kept> read_kept(const std::string& dir, std::string& metric) {
  const fs::path path = snapshots_root(dir) / "scores.json";
  if (!fs::exists(path)) return {};
  json j;
  try {
    j = json::parse(read_file(path.string(), kMiB, "scores.json"));
    metric = j.at("metric").get<std::string>();
    std::vector<Kept> kept;
    for (const json& k : j.at("kept")) kept.push_back({k.at(0).get<int64_t>(), k.at(1).get<double>()});
    return kept;
  } catch (const json::exception& e) {
    throw Error(path.string() + ": not a list of kept evaluations: " + e.what());
  }
}

std::string step_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return name;
}

void write_kept_checkpoint(const std::string& dir, const std::string& to, const Checkpoint& ckpt) {
  save_checkpoint(to, ckpt, task_files(dir, to));
}

}  // namespace

void check_metric(const std::string& metric) {
  if (metric != "loss" && metric != "bleu" && metric != "chrf")
    throw Error("unknown metric '" + metric + "' (choices: loss, bleu, chrf)");
}

bool better(const std::string& metric, double score, double best) {
  return metric == "loss" ? score < best : score > best;
}

std::string best_dir(const std::string& dir) { return (fs::path(dir) / "best").string(); }

void keep_if_best(const std::string& dir, const Checkpoint& ckpt, int64_t step, const std::string& metric,
                  double score, bool is_best, int64_t keep) {
  if (is_best) write_kept_checkpoint(dir, best_dir(dir), ckpt);
  if (keep <= 1) return;
  std::string kept_metric = metric;
  std::vector<Kept> kept = read_kept(dir, kept_metric);
  if (kept_metric != metric) kept.clear();  // a run that changed metric starts the list again
  std::erase_if(kept, [&](const Kept& k) { return k.step == step; });
  const auto at = std::find_if(kept.begin(), kept.end(), [&](const Kept& k) { return better(metric, score, k.score); });
  if (at == kept.end() && static_cast<int64_t>(kept.size()) >= keep) return;
  kept.insert(at, {step, score});
  write_kept_checkpoint(dir, (snapshots_root(dir) / step_name(step)).string(), params_only(ckpt));
  while (static_cast<int64_t>(kept.size()) > keep) {
    fs::remove_all(snapshots_root(dir) / step_name(kept.back().step));
    kept.pop_back();
  }
  json list = json::array();
  for (const Kept& k : kept) list.push_back({k.step, k.score});
  write_file_atomically((snapshots_root(dir) / "scores.json").string(),
                        json{{"metric", metric}, {"kept", list}}.dump() + "\n");
}

std::string run_of(const std::string& checkpoint_dir) {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(checkpoint_dir, ec);
  if (ec) return checkpoint_dir;
  if (!dir.has_filename()) dir = dir.parent_path();  // a trailing '/'
  const fs::path parent = dir.parent_path(), grandparent = parent.parent_path();
  const auto is_run = [](const fs::path& run) { return fs::exists(checkpoint_file(run.string())); };
  if (dir == fs::path(best_dir(parent.string())) && is_run(parent)) return parent.string();
  const bool kept = parent == snapshots_root(grandparent.string()) ||
                    parent == fs::path(snapshot_dir(grandparent.string(), 0)).parent_path();
  return kept && is_run(grandparent) ? grandparent.string() : dir.string();
}

std::vector<std::string> best_snapshots(const std::string& dir, int64_t k) {
  std::string metric;
  const std::vector<Kept> kept = read_kept(dir, metric);
  if (static_cast<int64_t>(kept.size()) < k)
    throw Error("--best " + std::to_string(k) + " but " + dir + " keeps " + std::to_string(kept.size()) +
                " evaluated checkpoints (kiln train --keep-best N keeps the N best)");
  std::vector<std::string> out;
  for (int64_t i = 0; i < k; ++i) {
    const fs::path path = snapshots_root(dir) / step_name(kept[static_cast<size_t>(i)].step);
    if (!fs::exists(path)) throw Error(path.string() + " is listed in scores.json but missing");
    out.push_back(path.string());
  }
  return out;
}

}  // namespace kiln::models
