#include "tools/bench_kernels.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "compiler/runtime/kiln_runtime.h"

namespace kiln::cli {
namespace {

struct KindTime {
  int calls = 0;         // per step
  double ms[2] = {0, 0};  // per step: at 1 thread, at N
};

}  // namespace

int64_t matmul_flops(const Graph& g) {
  int64_t flops = 0;
  for (const Node& n : g.nodes()) {
    if (n.op() == "matmul") {
      const Shape& lhs = g.type(n.operands[0]).shape;
      const int64_t k = lhs[lhs.size() - (n.attrs.get_bool("transpose_a") ? 2 : 1)];
      flops += 2 * g.type(n.results[0]).numel() * k;
    }
    // The fused loss counts as the products it stands for: the logits h w^T
    // (N x D x V), and for the gradient G w and G^T h; not its recomputation.
    if (n.op().rfind("linear_cross_entropy", 0) == 0) {
      const Shape &h = g.type(n.operands[0]).shape, &w = g.type(n.operands[1]).shape;
      const int64_t products = n.op() == "linear_cross_entropy" ? 1 : n.op() == "linear_cross_entropy_train" ? 3 : 2;
      flops += products * 2 * h[0] * h[1] * w[0];
    }
  }
  return flops;
}

void print_kernel_table(compiler::JitExecutable& exe, const BenchOptions& opts) {
  const int threads = kiln_num_threads();
  const compiler::Program& p = exe.compiled().program;
  std::map<std::string, KindTime> kinds, kernels;  // by kind, and by description
  for (const compiler::KernelCall& call : p.calls) ++kinds[p.kernels[static_cast<size_t>(call.kernel)].label].calls;
  double total[2] = {0, 0};
  std::map<std::string, double> flops;  // per step, by description
  const int counts[2] = {1, threads};
  for (int c = 0; c < 2; ++c) {
    kiln_set_num_threads(counts[c]);
    exe.run();  // warm the pool's threads
    exe.profile(true);
    for (int r = 0; r < opts.repeats; ++r) exe.run();
    std::vector<double> call_ms(p.calls.size(), 0.0);
    for (const compiler::CallSpan& span : exe.run_profile().calls) call_ms[span.call] += span.ms();
    for (size_t i = 0; i < p.calls.size(); ++i) {
      const double ms = call_ms[i] / opts.repeats;
      const compiler::Kernel& k = p.kernels[static_cast<size_t>(p.calls[i].kernel)];
      kinds[k.label].ms[c] += ms;
      KindTime& same = kernels[compiler::describe(k)];
      same.ms[c] += ms;
      same.calls += c == 0 ? 1 : 0;
      if (c == 0) flops[compiler::describe(k)] += static_cast<double>(matmul_flops(*k.graph));
      total[c] += ms;
    }
    exe.profile(false);
  }
  kiln_set_num_threads(threads);
  std::vector<std::pair<std::string, KindTime>> rows(kinds.begin(), kinds.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms[0] > b.second.ms[0]; });
  std::printf("\n  time by kernel kind (mean of %d steps, summed over the step's calls)\n", opts.repeats);
  std::printf("  %-26s %6s %11s %7s %11s %7s %9s\n", "kind", "calls", "1 thread ms", "%", "threads ms", "%",
              "speed-up");
  const auto row = [&](const char* name, int calls, const double* ms) {
    std::printf("  %-26s %6d %11.2f %6.1f%% %11.2f %6.1f%% %8.2fx\n", name, calls, ms[0], 100 * ms[0] / total[0], ms[1],
                100 * ms[1] / total[1], ms[1] > 0 ? ms[0] / ms[1] : 0.0);
  };
  for (const auto& [kind, t] : rows) row(kind.c_str(), t.calls, t.ms);
  row("all kernels", static_cast<int>(p.calls.size()), total);
  std::printf("  (threads: %d)\n", threads);

  std::vector<std::pair<std::string, KindTime>> costliest(kernels.begin(), kernels.end());
  std::sort(costliest.begin(), costliest.end(),
            [](const auto& a, const auto& b) { return a.second.ms[0] > b.second.ms[0]; });
  costliest.resize(std::min<size_t>(costliest.size(), 12));
  std::printf("\n  the costliest kernels (same kind, size and result type summed)\n");
  std::printf("  %-40s %6s %11s %9s %11s %9s\n", "kernel", "calls", "1 thread ms", "GFLOP/s", "threads ms", "GFLOP/s");
  for (const auto& [name, t] : costliest) {
    const double f = flops[name];
    std::printf("  %-40s %6d %11.2f %9.1f %11.2f %9.1f\n", name.c_str(), t.calls, t.ms[0], f > 0 ? f / t.ms[0] / 1e6 : 0.0,
                t.ms[1], f > 0 ? f / t.ms[1] / 1e6 : 0.0);
  }
}

}  // namespace kiln::cli
