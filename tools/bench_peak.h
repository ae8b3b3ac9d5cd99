#pragma once
// `kiln bench --peak`: this machine's f32 FMA peak, measured with a loop of
// independent vector FMA chains (the widest vectors the CPU has), at 1 thread
// and at N threads at once. The yardstick for a model's achieved GFLOP/s.
#include <string>

#include "tools/cmd_bench.h"

namespace kiln::cli {

struct PeakFlops {
  std::string isa;  // "avx512" or "avx2": the widest the CPU runs
  int lanes = 0;    // f32 lanes per vector
  int threads = 1;  // N
  double gflops_1 = 0, gflops_n = 0;
};

// Measures for about `seconds` per thread count; `threads` >= 1. Throws kiln::Error
// on a CPU without AVX2 and FMA.
PeakFlops measure_peak(int threads, double seconds = 0.3);

// The --peak report at opts.threads (0: all cores), as a table or, with --json,
// one JSON line.
void bench_peak(const BenchOptions& opts);

}  // namespace kiln::cli
