#include "models/checkpoint_average.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/transformer/transformer.h"

namespace kiln::models {

namespace fs = std::filesystem;

Checkpoint average_checkpoints(const std::vector<Checkpoint>& checkpoints) {
  if (checkpoints.empty()) throw Error("average: no checkpoints to average");
  const Checkpoint& last = checkpoints.back();
  for (const Checkpoint& c : checkpoints) {
    if (c.task != last.task) throw Error("average: checkpoints of tasks " + c.task + " and " + last.task);
    if (!same_architecture(c.config, last.config))
      throw Error("average: checkpoints of configs " + config_to_json(c.config) + " and " +
                  config_to_json(last.config));
  }
  Checkpoint out = last;
  const double n = static_cast<double>(checkpoints.size());
  for (const auto& [name, type] : param_types(last.config)) {
    std::vector<double> sum(static_cast<size_t>(numel(type.shape)), 0.0);
    for (const Checkpoint& c : checkpoints) {
      const auto it = c.tensors.find(name);
      if (it == c.tensors.end() || !(it->second.type() == type)) throw Error("average: param %" + name + " differs");
      const auto& values = it->second.f32();
      for (size_t i = 0; i < sum.size(); ++i) sum[i] += values.data()[i];
    }
    auto& mean = out.tensors.at(name).f32();
    for (size_t i = 0; i < sum.size(); ++i) mean.data()[i] = static_cast<float>(sum[i] / n);
  }
  return out;
}

std::string snapshot_dir(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return (fs::path(dir) / "snapshots" / name).string();
}

std::vector<std::string> snapshots(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "snapshots", ec))
    if (e.is_directory() && e.path().filename().string().rfind("step-", 0) == 0) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());  // zero-padded steps sort by step
  return out;
}

std::vector<FileBytes> task_files(const std::string& from, const std::string& to) {
  // The run's own records stay with the run.
  const fs::path skipped[] = {fs::path(checkpoint_file(from)).filename(), "loss_curve.svg", "log.jsonl",
                              "settings.toml"};
  std::vector<FileBytes> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(from, ec)) {
    if (!e.is_regular_file() || std::find(std::begin(skipped), std::end(skipped), e.path().filename()) !=
                                    std::end(skipped))
      continue;
    files.push_back({(fs::path(to) / e.path().filename()).string(),
                     read_file(e.path().string(), 256 * kMiB, "a task file")});
  }
  if (ec) throw Error("cannot list " + from + ": " + ec.message());
  return files;
}

void prune_snapshots(const std::string& dir, int64_t keep) {
  const std::vector<std::string> all = snapshots(dir);
  for (size_t i = 0; i + static_cast<size_t>(std::max<int64_t>(keep, 0)) < all.size(); ++i) fs::remove_all(all[i]);
}

}  // namespace kiln::models
