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
// Writes the average into opts.output_dir (all or none) and returns the
// checkpoint directories averaged, oldest or best first; Python's kiln.average
// too. kiln::Error for what cannot be averaged, naming why.
std::vector<std::string> average_into(const AverageOptions& opts);
// average_into, then a line saying what it wrote.
void average(const AverageOptions& opts);

}  // namespace kiln::cli
