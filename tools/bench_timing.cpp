#include "tools/bench_timing.h"

#include <time.h>

#include <algorithm>
#include <vector>

namespace kiln::cli {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Timing time_runs(Executable& exe, const BenchOptions& opts) {
  return time_calls([&] { exe.run(); }, opts);
}

namespace {

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

}  // namespace

Timing time_calls(const std::function<void()>& run, const BenchOptions& opts) {
  run();
  std::vector<double> ms;
  double total = 0;
  while (static_cast<int>(ms.size()) < opts.repeats && (ms.size() < 3 || total < opts.max_ms)) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = process_cpu_ms();
    run();
    const double wall = ms_since(start);
    ms.push_back(opts.cpu_time ? process_cpu_ms() - cpu_start : wall);
    total += wall;
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms.front(), static_cast<int>(n)};
}

}  // namespace kiln::cli
