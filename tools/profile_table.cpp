#include "tools/profile_table.h"

#include <algorithm>
#include <map>

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
  out << format("  %-38s %-34s %-24s %5s %9s %6s %8s %8s  %s\n", "kernel", "ops", "scope", "calls", "total ms", "%",
                "GFLOP/s", "GB/s", "nearer limit");
  bool from_cache = false;
  for (const auto& row : rows) {
    const double gflops = row.ms > 0 ? row.flops / row.ms / 1e6 : 0;
    const double gbps = row.ms > 0 ? row.bytes / row.ms / 1e6 : 0;
    const double compute = gflops / peak_gflops, memory = gbps / peak_gbps;
    from_cache = from_cache || memory > 1;
    const std::string limit =
        compute >= memory ? format("compute %.0f%%", 100 * compute) : format("memory %.0f%%", 100 * memory);
    out << format("  %-38s %-34s %-24s %5d %9.3f %5.1f%% %8.1f %8.1f  %s\n", clip(row.kernel, 38).c_str(),
                  clip(row.ops, 34).c_str(), clip(row.scope, 24).c_str(), row.calls, row.ms,
                  step_ms > 0 ? 100 * row.ms / step_ms : 0.0, gflops, gbps, limit.c_str());
  }
  if (from_cache)
    out << "  (memory % is of the bandwidth to DRAM; above 100%, a kernel's data came from the caches)\n";
}

void print_scope_table(const compiler::Program& p, const compiler::RunProfile& r, int depth, std::ostream& out) {
  const std::vector<compiler::ScopeProfileRow> rows = compiler::scope_profile(p, r, depth);
  double forward = 0, backward = 0;
  for (const auto& row : rows) {
    forward += row.forward_ms;
    backward += row.backward_ms;
  }
  const double step_ms = forward + backward;
  const auto share = [&](double ms) { return step_ms > 0 ? 100 * ms / step_ms : 0.0; };
  size_t width = 16;
  for (const auto& row : rows) width = std::max(width, row.scope.size());
  const auto pad = [&](const std::string& s) { return s + std::string(width - s.size(), ' '); };
  out << format("kernel time per step by model scope: %.3f ms (mean of %d runs; a fused kernel counts where its "
                "matmul, norm or reduction is, an equal share in each of several)\n",
                step_ms, r.runs);
  out << "  " << pad("scope") << format(" %11s %11s %11s %7s %8s\n", "forward ms", "backward ms", "total ms", "%", "calls");
  for (const auto& row : rows)
    out << "  " << pad(row.scope.empty() ? "(no scope)" : row.scope)
        << format(" %11.3f %11.3f %11.3f %6.1f%% %8.1f\n", row.forward_ms, row.backward_ms,
                  row.forward_ms + row.backward_ms, share(row.forward_ms + row.backward_ms), row.calls);
  out << "  " << pad("all") << format(" %11.3f %11.3f %11.3f %6.1f%%\n", forward, backward, step_ms, 100.0);
}

void print_weighted_profile(const std::vector<WeightedStep>& steps, std::ostream& out) {
  int64_t total_steps = 0;
  for (const WeightedStep& s : steps) total_steps += s.steps;
  std::map<std::string, std::pair<double, double>> kinds;  // kind -> (ms per step, calls per step), weighted
  double step_ms = 0;
  out << format("the step over its %zu batch shapes, weighted by the steps each trained (%lld steps):\n", steps.size(),
                static_cast<long long>(total_steps));
  out << format("  %-16s %7s %8s %12s %11s\n", "shape", "steps", "% steps", "ms per step", "arena MiB");
  for (const WeightedStep& s : steps) {
    const double weight = static_cast<double>(s.steps) / static_cast<double>(total_steps);
    double ms = 0;
    for (const compiler::KernelProfileRow& row : compiler::kernel_profile(*s.program, *s.profile)) {
      ms += row.ms;
      // The kind: describe()'s first word ("matmul 4 ops f32[..]" -> matmul).
      auto& [kind_ms, kind_calls] = kinds[row.kernel.substr(0, row.kernel.find(' '))];
      kind_ms += weight * row.ms;
      kind_calls += weight * row.calls;
    }
    step_ms += weight * ms;
    out << format("  %-16s %7lld %7.1f%% %12.2f %11.1f\n", s.shape.c_str(), static_cast<long long>(s.steps),
                  100 * weight, ms, static_cast<double>(s.program->plan.arena_bytes) / (1 << 20));
  }
  std::vector<std::pair<std::string, std::pair<double, double>>> rows(kinds.begin(), kinds.end());
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  out << format("  %-30s %10s %12s %7s\n", "kernel kind", "calls", "ms per step", "%");
  for (const auto& [kind, t] : rows)
    out << format("  %-30s %10.1f %12.2f %6.1f%%\n", clip(kind, 30).c_str(), t.second, t.first,
                  step_ms > 0 ? 100 * t.first / step_ms : 0.0);
  out << format("  %-30s %10s %12.2f %6.1f%%\n", "all kernels", "", step_ms, 100.0);
}

}  // namespace kiln::cli
