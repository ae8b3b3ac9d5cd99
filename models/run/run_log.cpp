#include "models/run/run_log.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "engine/json_nesting.h"

namespace kiln::models {

RunLog::RunLog(const std::string& dir, int64_t step) : path_((std::filesystem::path(dir) / "log.jsonl").string()) {
  if (std::filesystem::exists(path_)) {
    std::string kept;
    const std::string text = read_file(path_, size_t{1} << 30, "a training log");
    for (size_t start = 0; start < text.size();) {
      const size_t end = std::min(text.find('\n', start), text.size());
      const std::string line = text.substr(start, end - start);
      start = end + 1;
      // A line cut short by a kill, past the checkpoint or nested deeper than
      // any the trainer writes (json_nesting.h) goes.
      if (json_deeper_than(line, 4)) continue;
      const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.value("step", int64_t{0}) <= step) kept += line + "\n";
    }
    if (step == 0) kept.clear();
    write_file_atomically(path_, kept);
  }
  out_.open(path_, std::ios::app);
  if (!out_) throw Error("cannot write " + path_);
}

void RunLog::start(int64_t step, const nlohmann::ordered_json& settings) {
  write({{"event", "start"}, {"step", step}, {"settings", settings}});
}

void RunLog::train(int64_t step, double loss, double lr, double tokens_per_second, double minutes) {
  write({{"event", "train"},
         {"step", step},
         {"loss", loss},
         {"lr", lr},
         {"tokens_per_second", tokens_per_second},
         {"minutes", minutes}});
}

void RunLog::dev(int64_t step, double minutes, double loss, double bleu, double chrf, bool best) {
  write({{"event", "dev"},
         {"step", step},
         {"minutes", minutes},
         {"loss", loss},
         {"bleu", bleu},
         {"chrf", chrf},
         {"best", best}});
}

void RunLog::dev_metrics(int64_t step, double minutes, const nlohmann::ordered_json& metrics, bool best) {
  nlohmann::ordered_json line{{"event", "dev"}, {"step", step}, {"minutes", minutes}};
  for (const auto& [key, value] : metrics.items()) line[key] = value;
  line["best"] = best;
  write(line);
}

void RunLog::stop(int64_t step, const std::string& reason) {
  write({{"event", "stop"}, {"step", step}, {"reason", reason}});
}

void RunLog::write(const nlohmann::ordered_json& line) {
  out_ << line.dump() << '\n';
  out_.flush();
  if (!out_) throw Error("cannot write " + path_);
}

}  // namespace kiln::models
