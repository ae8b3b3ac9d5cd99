#include "tools/profile_table.h"

#include <cstdio>
#include <string>

#include "tools/bench_peak.h"

namespace kiln::cli {
namespace {

std::string format(const char* fmt, auto... args) {
  char line[512];
  std::snprintf(line, sizeof line, fmt, args...);
  return line;
}

// At most `width` characters, the cut marked with "...".
std::string clip(const std::string& s, size_t width) {
  return s.size() <= width ? s : s.substr(0, width - 3) + "...";
}

}  // namespace

void print_profile_table(const compiler::Program& p, const compiler::RunProfile& r, int threads, std::ostream& out) {
  const std::vector<compiler::KernelProfileRow> rows = compiler::kernel_profile(p, r);
  const double peak_gflops = measure_peak(threads, 0.2).gflops_n;
  const double peak_gbps = measure_bandwidth(threads);
  double step_ms = 0;
  int calls = 0;
  for (const auto& row : rows) {
    step_ms += row.ms;
    calls += row.calls;
  }
  out << format("kernel time per step: %.3f ms in %d calls (mean of %d runs, %d thread(s)); limits: %.1f GFLOP/s "
                "FMA peak, %.1f GB/s memory\n",
                step_ms, calls, r.runs, threads, peak_gflops, peak_gbps);
  out << format("  %-38s %-34s %5s %9s %6s %8s %8s  %s\n", "kernel", "ops", "calls", "total ms", "%", "GFLOP/s",
                "GB/s", "nearer limit");
  bool from_cache = false;
  for (const auto& row : rows) {
    const double gflops = row.ms > 0 ? row.flops / row.ms / 1e6 : 0;
    const double gbps = row.ms > 0 ? row.bytes / row.ms / 1e6 : 0;
    const double compute = gflops / peak_gflops, memory = gbps / peak_gbps;
    from_cache = from_cache || memory > 1;
    const std::string limit =
        compute >= memory ? format("compute %.0f%%", 100 * compute) : format("memory %.0f%%", 100 * memory);
    out << format("  %-38s %-34s %5d %9.3f %5.1f%% %8.1f %8.1f  %s\n", clip(row.kernel, 38).c_str(),
                  clip(row.ops, 34).c_str(), row.calls, row.ms, step_ms > 0 ? 100 * row.ms / step_ms : 0.0, gflops,
                  gbps, limit.c_str());
  }
  if (from_cache)
    out << "  (memory % is of the bandwidth to DRAM; above 100%, a kernel's data came from the caches)\n";
}

}  // namespace kiln::cli
