#pragma once
// `kiln bench`: times the JIT against the interpreter op by op at realistic sizes
// (medians of repeated runs after a warm-up, compile time apart), then the JIT's
// matmul throughput in GFLOP/s; with --model, a whole model's training step
// (bench_model.cpp); with --peak, the machine's FMA peak (bench_peak.cpp). A
// measurement tool, not a test: ctest never runs it.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"

namespace CLI {
class App;
}

namespace kiln::cli {

struct BenchOptions {
  int threads = 0;               // the JIT's threads; 0: all cores
  int repeats = 10;              // timed runs per op and backend (at least 3)
  double max_ms = 3000;          // stop repeating once a measurement has taken this long
  bool cpu_time = false;         // time runs by the process's CPU time instead of wall time
  std::vector<std::string> ops;  // only these benchmark rows (by name); empty: all
  // --model transformer: the training step of a preset instead of the op table.
  std::string model;
  std::string config = "small";
  int64_t batch = 0;  // 0: 32, or 16 for base
  int64_t src_len = 32, tgt_len = 32, vocab = 8000;
  bool unfused_loss = false;       // --model: the loss as matmul then cross_entropy (TransformerConfig::fused_loss)
  std::string compile_only_cache;  // internal: compile with this cache, print the seconds, exit
  bool peak = false;               // measure the f32 FMA peak (with --model: also report the step's share of it)
  bool per_kernel = false;         // --model: the step's time by kernel kind, at 1 thread and at --threads
  bool json = false;               // --peak, --model: one JSON line instead of the report
  std::string trace;               // --model: write the Chrome trace of 5 profiled steps here
  DType precision = DType::f32;    // --model: --precision bf16 runs the bf16-matmuls and bf16-saves passes;
                                   // --op matmul: adds kiln's GEMM of bf16 operands
  // --target-cpu: kiln's code for this CPU (empty: the host's); --op matmul
  // pins OpenBLAS and oneDNN to its vector width, --peak measures at it.
  std::string target_cpu;
};

// The f32 lanes of opts.target_cpu's vectors, or of the host's. Throws
// kiln::Error for a CPU LLVM does not know or whose code this host cannot run.
int bench_lanes(const BenchOptions& opts);

// Adds the `bench` subcommand and its flags to `app`, filling `opts`.
CLI::App* add_bench_command(CLI::App& app, BenchOptions& opts);

void bench(const BenchOptions& opts);

// The --model benchmark: kernel count before and after fusion, naive and planned
// bytes, cold and warm-cache compile seconds (the warm compile in a fresh
// process, as a user's next run would be), the step time (median and min), and
// the step's matmul FLOPs counted from the train graph, as GFLOP/s.
void bench_model(const BenchOptions& opts);

}  // namespace kiln::cli
