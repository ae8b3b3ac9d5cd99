#include "models/train/run_log.h"

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

void RunLog::write(const std::string& json_object) {
  out_ << json_object << '\n';
  out_.flush();
  if (!out_) throw Error("cannot write " + path_);
}

}  // namespace kiln::models
