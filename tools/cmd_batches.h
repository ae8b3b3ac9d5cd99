#pragma once
// `kiln batches` (cmd_batches.cpp).
#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace kiln::cli {

struct BatchesOptions {
  std::string task = "de-en";
  std::string checkpoint_dir;  // where the task keeps its files (de-en: spm.model)
  std::string split = "train";
  int64_t epoch = 0;
  uint64_t seed = 0;
  int64_t batch_tokens = 0;  // 0: the recipe's for `minutes`
  double minutes = 0;        // the training budget whose recipe to use (0: a step budget)
  std::string data_dir = "/usr/share/trans/de-en";
  std::string output_path;
};

CLI::App* add_batches_command(CLI::App& app, BatchesOptions& opts);
void write_batches(const BatchesOptions& opts);

}  // namespace kiln::cli
