#pragma once
// How `kiln bench` times runs: the median (and the fastest) of repeated runs
// after a warm-up.
#include <chrono>
#include <functional>

#include "engine/executable.h"
#include "tools/cmd_bench.h"

namespace kiln::cli {

double ms_since(std::chrono::steady_clock::time_point start);

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  int runs = 0;
};

// One warm-up run, then timed runs until `repeats` or until max_ms has passed
// (three runs at least).
Timing time_runs(Executable& exe, const BenchOptions& opts);
// The same for any call.
Timing time_calls(const std::function<void()>& run, const BenchOptions& opts);

}  // namespace kiln::cli
