// `kiln bench --model transformer --config C`: the training step of a preset on
// random tokens (no padding), through the whole compiler. tools/bench/ runs the
// same step in PyTorch from the --json line.
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>

#include "compiler/jit_executable.h"
#include "compiler/profile.h"
#include "compiler/runtime/mpi_job.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"
#include "engine/param_init.h"
#include "engine/tensor/collectives.h"
#include "models/transformer/transformer.h"
#include "tools/bench_peak.h"
#include "tools/bench_kernels.h"
#include "tools/bench_timing.h"

namespace kiln::cli {

namespace {

// Under mpirun, each rank's part of a batch of B x ranks rows, its gradients
// summed over the ranks (models/transformer/transformer.h).
Graph train_graph(const BenchOptions& opts) {
  models::TransformerConfig cfg = models::preset_config(opts.config);
  cfg.vocab = opts.vocab;
  cfg.fused_loss = !opts.unfused_loss;
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  adam.allreduce = collectives().size() > 1;
  const int64_t batch = opts.batch > 0 ? opts.batch : (opts.config == "base" ? 16 : 32);
  return models::build_train_graph(cfg, batch, opts.src_len, opts.tgt_len, adam);
}

compiler::JitOptions jit_options(const BenchOptions& opts, const std::string& cache_dir) {
  compiler::JitOptions o;
  o.kernels.cache_dir = cache_dir;
  o.pipeline.passes.precision = opts.precision;
  o.target_cpu = opts.target_cpu;
  return o;
}

Tensor random_tokens(const TensorType& t, int64_t vocab, std::mt19937& rng) {
  Tensor out = Tensor::zeros(t);
  std::uniform_int_distribution<int32_t> token(1, static_cast<int32_t>(vocab - 1));
  for (int32_t& v : out.i32()) v = token(rng);
  return out;
}

// The warm-cache compile, in a fresh process of this same binary.
double warm_compile_seconds(const BenchOptions& opts, const std::string& cache) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw Error("bench: cannot find this executable");
  exe[n] = '\0';
  const std::string cmd = std::string("'") + exe + "' bench --model transformer --config " + opts.config +
                          " --batch " + std::to_string(opts.batch) + " --src-len " + std::to_string(opts.src_len) +
                          " --tgt-len " + std::to_string(opts.tgt_len) + " --vocab " + std::to_string(opts.vocab) +
                          " --precision " + std::string(dtype_name(opts.precision)) +
                          (opts.unfused_loss ? " --unfused-loss" : "") + " --compile-only '" + cache + "'";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw Error("bench: cannot run " + cmd);
  double seconds = -1;
  if (std::fscanf(p, "%lf", &seconds) != 1) seconds = -1;
  if (pclose(p) != 0 || seconds < 0) throw Error("bench: the warm compile failed: " + cmd);
  return seconds;
}

// What --json prints (and the report shows): the fields tools/bench/ reads.
struct StepReport {
  Timing step;
  int ranks = 1;
  compiler::CollectiveTimes allreduce;  // per step, from profiled runs after the timed ones (ranks > 1)
  double cold_s = 0, warm_s = 0;
  int64_t flops = 0;   // matmul FLOPs per step
  int64_t tokens = 0;  // source + target tokens per step
  double gflops = 0;
  double tokens_per_s = 0, rss_mib = 0;
  std::optional<PeakFlops> peak;
};

void print_json(const BenchOptions& opts, const std::string& cpu, const StepReport& r) {
  nlohmann::ordered_json j;
  j["framework"] = "kiln";
  j["config"] = opts.config;
  j["precision"] = dtype_name(opts.precision);
  j["threads"] = kiln_num_threads();
  j["ranks"] = r.ranks;
  j["batch"] = opts.batch;
  j["src_len"] = opts.src_len;
  j["tgt_len"] = opts.tgt_len;
  j["vocab"] = opts.vocab;
  j["runs"] = r.step.runs;
  j["median_ms"] = r.step.median_ms;
  j["min_ms"] = r.step.min_ms;
  j["tokens_per_step"] = r.tokens;
  j["tokens_per_s"] = r.tokens_per_s;
  j["flops_per_step"] = r.flops;
  j["gflops"] = r.gflops;
  j["peak_rss_mib"] = r.rss_mib;
  j["compile_cold_s"] = r.cold_s;
  j["compile_warm_s"] = r.warm_s;
  j["cpu"] = cpu;
  if (r.ranks > 1) {
    j["allreduce_bytes"] = r.allreduce.bytes;
    j["allreduce_in_flight_ms"] = r.allreduce.in_flight_ms;
    j["allreduce_wait_ms"] = r.allreduce.wait_ms;
    j["allreduce_start_ms"] = r.allreduce.start_ms;
  }
  if (r.peak) {
    j["peak_gflops"] = r.peak->gflops_n;
    j["pct_peak"] = 100 * r.gflops / r.peak->gflops_n;
  }
  std::printf("%s\n", j.dump().c_str());
}

}  // namespace

void bench_model(const BenchOptions& given) {
  // mpirun -np N kiln bench --model transformer: the data-parallel step, each
  // rank a batch of --batch rows (tokens/s counts all N).
  if (compiler::mpirun_ranks() > 0) compiler::start_mpi_job();
  const int rank = collectives().rank(), ranks = collectives().size();
  BenchOptions opts = given;
  if (opts.batch == 0) opts.batch = opts.config == "base" ? 16 : 32;
  const Graph g = train_graph(opts);
  if (!opts.compile_only_cache.empty()) {
    const auto start = std::chrono::steady_clock::now();
    compiler::JitExecutable exe(g, jit_options(opts, opts.compile_only_cache));
    std::printf("%.3f\n", ms_since(start) / 1000);
    return;
  }
  const std::string cache = (std::filesystem::temp_directory_path() / ("kiln-bench-cache-" + std::to_string(getpid())))
                                .string();
  std::filesystem::remove_all(cache);
  size_t unfused = 0;
  for (const Node& n : g.nodes()) unfused += n.def->side_effect ? 0 : 1;

  const auto start = std::chrono::steady_clock::now();
  compiler::JitExecutable exe(g, jit_options(opts, cache));
  const double cold_s = ms_since(start) / 1000;
  // A fresh process cannot join the MPI job: the warm compile is measured without ranks.
  const double warm_s = ranks > 1 ? -1 : warm_compile_seconds(opts, cache);
  std::filesystem::remove_all(cache);

  std::mt19937 rng(1 + static_cast<unsigned>(rank));
  for (const char* name : {"src", "tgt_in", "tgt_out"}) {
    const Value v = *g.find(name);
    exe.bind(name, random_tokens(g.type(v), opts.vocab, rng));
  }
  if (ranks > 1) {
    exe.bind(kGradWeightInput, Tensor::scalar(1.0f / static_cast<float>(ranks)));
    exe.bind(models::kFirstExampleInput, Tensor(Tensor::I32(static_cast<int32_t>(rank * opts.batch))));
  }
  bind_initial_values(exe, 0);

  StepReport r;
  r.ranks = ranks;
  r.step = time_runs(exe, opts);
  if (ranks > 1 || !opts.trace.empty()) {
    exe.profile(true);
    for (int i = 0; i < 5; ++i) exe.run();
    r.allreduce = compiler::collective_times(exe.compiled().program, exe.run_profile());
    exe.profile(false);
    if (rank == 0 && !opts.trace.empty())
      write_file_atomically(opts.trace, compiler::chrome_trace(exe.compiled().program, exe.run_profile()));
  }
  r.cold_s = cold_s;
  r.warm_s = warm_s;
  r.flops = matmul_flops(g);  // after autodiff the backward's matmuls are in g too
  r.gflops = static_cast<double>(r.flops) / r.step.median_ms / 1e6;
  r.tokens = opts.batch * ranks * (opts.src_len + opts.tgt_len);
  r.tokens_per_s = static_cast<double>(r.tokens) / r.step.median_ms * 1000;
  if (rank != 0) return;  // rank 0 reports for the job
  if (opts.peak && ranks == 1) r.peak = measure_peak(kiln_num_threads(), 0.3, bench_lanes(opts));
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  r.rss_mib = static_cast<double>(usage.ru_maxrss) / 1024;
  if (opts.json) return print_json(opts, exe.target().cpu, r);

  const compiler::Program& p = exe.compiled().program;
  const compiler::CompileTimes& t = exe.compile_times();
  const auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); };
  std::printf("kiln bench --model transformer --config %s: B=%lld S=%lld T=%lld vocab %lld, %s, %d threads\n",
              opts.config.c_str(), static_cast<long long>(opts.batch), static_cast<long long>(opts.src_len),
              static_cast<long long>(opts.tgt_len), static_cast<long long>(opts.vocab), exe.target().cpu.c_str(),
              kiln_num_threads());
  double load[1];
  if (getloadavg(load, 1) == 1) std::printf("load average: %.2f\n", load[0]);
  std::printf("  graph nodes                 %zu (kernels without fusion: %zu)\n", g.nodes().size(), unfused);
  std::printf("  kernel calls after fusion   %zu (%.2fx), %zu distinct kernels\n", p.calls.size(),
              static_cast<double>(p.calls.size()) / static_cast<double>(unfused), p.kernels.size());
  std::printf("  temporaries                 naive %.1f MiB, planned %.1f MiB (%.2fx), %d in place\n",
              mib(p.plan.naive_bytes), mib(p.plan.arena_bytes),
              static_cast<double>(p.plan.arena_bytes) / static_cast<double>(std::max<int64_t>(1, p.plan.naive_bytes)),
              p.plan.in_place_reuses);
  std::printf("  compile, cold cache         %.2f s (lower %.1f s, optimize %.1f s, codegen %.1f s summed over threads)\n",
              cold_s, t.lower_ms / 1000, t.optimize_ms / 1000, t.codegen_ms / 1000);
  std::printf("  compile, warm cache         %.2f s (a fresh process)\n", warm_s);
  std::printf("  training step               %.1f ms median, %.1f ms min (of %d), %.0f tokens/s\n", r.step.median_ms,
              r.step.min_ms, r.step.runs, r.tokens_per_s);
  std::printf("  matmul work                 %.2f GFLOP per step, %.1f GFLOP/s", static_cast<double>(r.flops) / 1e9,
              r.gflops);
  if (r.peak)
    std::printf(" (%.1f%% of the %.1f GFLOP/s FMA peak)", 100 * r.gflops / r.peak->gflops_n, r.peak->gflops_n);
  std::printf("\n  peak resident memory        %.0f MiB\n", r.rss_mib);
  if (ranks > 1)
    std::printf("  allreduce over %d ranks     %.1f MiB per step in flight %.1f ms, waited for %.1f ms (%.1f%% of "
                "the step; %.0f%% of the time in flight overlapped the kernels), starting them %.1f ms\n",
                ranks, r.allreduce.bytes / (1 << 20), r.allreduce.in_flight_ms, r.allreduce.wait_ms,
                100 * r.allreduce.wait_ms / r.step.median_ms,
                100 * (1 - r.allreduce.wait_ms / std::max(r.allreduce.in_flight_ms, 1e-9)), r.allreduce.start_ms);
  if (opts.per_kernel) print_kernel_table(exe, opts);
}

}  // namespace kiln::cli
