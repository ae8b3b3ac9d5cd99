#pragma once
// `kiln bench --peak`: this machine's f32 FMA peak, measured with a loop of
// independent vector FMA chains (the widest vectors the CPU has), at 1 thread
// and at N threads at once, and its memory bandwidth. The yardsticks for a
// model's (and a kernel's, in `kiln profile`) achieved GFLOP/s and GB/s.
#include <string>

#include "tools/cmd_bench.h"

namespace kiln::cli {

struct PeakFlops {
  std::string isa;  // "avx512" or "avx2": the widest the CPU runs
  int lanes = 0;    // f32 lanes per vector
  int threads = 1;  // N
  double gflops_1 = 0, gflops_n = 0;
};

// Measures for about `seconds` per thread count with vectors of at most
// `max_lanes` f32s (the code a --target-cpu runs); `threads` >= 1. Throws
// kiln::Error on a CPU without AVX2 and FMA.
PeakFlops measure_peak(int threads, double seconds = 0.3, int max_lanes = 16);

// This machine's memory bandwidth in GB/s (bytes read plus bytes written): each
// of `threads` threads copies its share of a buffer far larger than the caches,
// best of three. The yardstick for a kernel's achieved GB/s.
double measure_bandwidth(int threads);

// The --peak report at opts.threads (0: all cores), as a table or, with --json,
// one JSON line.
void bench_peak(const BenchOptions& opts);

}  // namespace kiln::cli
