#include "tools/bench_timing.h"

#include <algorithm>
#include <vector>

namespace kiln::cli {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

Timing time_runs(Executable& exe, const BenchOptions& opts) {
  exe.run();
  std::vector<double> ms;
  double total = 0;
  while (static_cast<int>(ms.size()) < opts.repeats && (ms.size() < 3 || total < opts.max_ms)) {
    const auto start = std::chrono::steady_clock::now();
    exe.run();
    ms.push_back(ms_since(start));
    total += ms.back();
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  return {n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2, ms.front(), static_cast<int>(n)};
}

}  // namespace kiln::cli
