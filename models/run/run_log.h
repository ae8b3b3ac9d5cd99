#pragma once
// A training run's machine-readable log, DIR/log.jsonl: one JSON object a line,
//   {"event": "start", "step": S, "settings": {...}}             each time a run starts or resumes
//   {"event": "train", "step": S, "loss": L, "lr": R, "tokens_per_second": T, "minutes": M}
//   {"event": "dev", "step": S, "minutes": M, "loss": L, "bleu": B, "chrf": C, "best": true|false}
//   (a language model's: "loss", "perplexity" and "bits_per_byte" in place of "bleu" and "chrf")
//   {"event": "stop", "step": S, "reason": "..."}                 early stopping
// A resumed run first drops the lines past its checkpoint's step (a run killed
// after its last save logged steps the resume does again), so the log reads as
// one uninterrupted run. Each line is flushed as it is written.
#include <cstdint>
#include <fstream>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace kiln::models {

class RunLog {
 public:
  // Opens DIR/log.jsonl for appending, keeping only lines up to `step` (0: a new run).
  RunLog(const std::string& dir, int64_t step);
  // The lines of the events above, one each.
  void start(int64_t step, const nlohmann::ordered_json& settings);
  void train(int64_t step, double loss, double lr, double tokens_per_second, double minutes);
  void dev(int64_t step, double minutes, double loss, double bleu, double chrf, bool best);
  // A dev line of a model kind's own metrics: {"event": "dev", "step", "minutes", METRICS..., "best"}.
  void dev_metrics(int64_t step, double minutes, const nlohmann::ordered_json& metrics, bool best);
  void stop(int64_t step, const std::string& reason);

 private:
  void write(const nlohmann::ordered_json& line);

  std::string path_;
  std::ofstream out_;
};

}  // namespace kiln::models
