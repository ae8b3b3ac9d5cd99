#pragma once
// `kiln bench`: times the JIT against the interpreter op by op at realistic sizes
// (medians of repeated runs after a warm-up, compile time apart), then the JIT's
// matmul throughput in GFLOP/s. A measurement tool, not a test: ctest never runs it.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kiln::cli {

struct BenchOptions {
  int threads = 0;               // the JIT's threads; 0: all cores
  int repeats = 10;              // timed runs per op and backend (at least 3)
  double max_ms = 3000;          // stop repeating once a measurement has taken this long
  std::vector<std::string> ops;  // only these benchmark rows (by name); empty: all
};

// Adds the `bench` subcommand and its flags to `app`, filling `opts`.
CLI::App* add_bench_command(CLI::App& app, BenchOptions& opts);

void bench(const BenchOptions& opts);

}  // namespace kiln::cli
