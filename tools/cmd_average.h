#pragma once
// `kiln average` (cmd_average.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kiln::cli {

struct AverageOptions {
  std::vector<std::string> inputs;  // checkpoint directories
  std::string run_dir;              // --checkpoint: a run whose snapshots to average
  int64_t last = 0;                 // --last N
  int64_t best = 0;                 // --best N
  std::string output_dir;
};

CLI::App* add_average_command(CLI::App& app, AverageOptions& opts);
void average(const AverageOptions& opts);

}  // namespace kiln::cli
