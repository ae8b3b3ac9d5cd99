#include "tools/bench_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "compiler/target/target.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/error.h"
#include "tools/bench_timing.h"

namespace kiln::cli {
namespace {

// acc = acc * a + b over independent chains: enough of them to cover the FMA
// latency times the FMA units (4 cycles x 2 units on current x86), fewer than
// the vector registers so none spills (AVX2 has 16: 12 chains + a + b).
// a < 1 pulls every chain to b / (1 - a) = 1: no overflow, no denormals.
constexpr float kA = 0.999999f, kB = 1e-6f;
constexpr int kChains512 = 16, kChains256 = 12;

__attribute__((target("avx512f"))) float fma_chains_avx512(int64_t iterations) {
  __m512 acc[kChains512];
  for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_set1_ps(1.0f + static_cast<float>(c) * 1e-3f);
  const __m512 a = _mm512_set1_ps(kA), b = _mm512_set1_ps(kB);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains512; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  }
  for (int c = 1; c < kChains512; ++c) acc[0] = _mm512_add_ps(acc[0], acc[c]);
  // Stored and summed: GCC 12's _mm512_reduce_add_ps warns inside its own header.
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc[0]);
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}

__attribute__((target("avx2,fma"))) float fma_chains_avx2(int64_t iterations) {
  __m256 acc[kChains256];
  for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_set1_ps(1.0f + static_cast<float>(c) * 1e-3f);
  const __m256 a = _mm256_set1_ps(kA), b = _mm256_set1_ps(kB);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains256; ++c) acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  }
  for (int c = 1; c < kChains256; ++c) acc[0] = _mm256_add_ps(acc[0], acc[c]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  float sum = 0;
  for (float x : lanes) sum += x;
  return sum;
}

struct Kernel {
  const char* isa;
  int lanes, chains;
  float (*run)(int64_t iterations);
  double flops(int64_t iterations) const { return 2.0 * lanes * chains * static_cast<double>(iterations); }
};

Kernel widest_kernel(int max_lanes) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && max_lanes >= 16) return {"avx512", 16, kChains512, fma_chains_avx512};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2", 8, kChains256, fma_chains_avx2};
  throw Error("bench --peak: this CPU has neither AVX-512 nor AVX2 with FMA");
}

std::atomic<float> sink;  // keeps the chains' results alive

// Wall seconds for `threads` threads each running the kernel `iterations` times,
// timed from a common start (thread creation excluded).
double run_threads(const Kernel& k, int threads, int64_t iterations) {
  std::atomic<int> ready = 0;
  std::atomic<bool> go = false;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      ++ready;
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      sink.store(k.run(iterations), std::memory_order_relaxed);
    });
  while (ready.load() < threads) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& t : pool) t.join();
  return ms_since(start) / 1000;
}

// The best of three runs of seconds / 3 each: a shared machine's other load
// only ever lowers a run.
double best_gflops(const Kernel& k, int threads, int64_t iterations) {
  double best = 0;
  for (int rep = 0; rep < 3; ++rep)
    best = std::max(best, k.flops(iterations) * threads / run_threads(k, threads, iterations) / 1e9);
  return best;
}

}  // namespace

PeakFlops measure_peak(int threads, double seconds, int max_lanes) {
  const Kernel k = widest_kernel(max_lanes);
  int64_t iterations = 1 << 14;
  double took = 0;
  while ((took = run_threads(k, 1, iterations)) < 0.02) iterations *= 2;
  iterations = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(iterations) * seconds / 3 / took));
  PeakFlops p{k.isa, k.lanes, threads, best_gflops(k, 1, iterations), 0};
  p.gflops_n = threads == 1 ? p.gflops_1 : best_gflops(k, threads, iterations);
  return p;
}

double measure_bandwidth(int threads) {
  constexpr size_t kBytes = size_t{256} << 20;  // each buffer: far beyond any L3
  std::vector<char> from(kBytes, 1), to(kBytes, 0);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<std::thread> pool;
    const auto start = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const size_t begin = kBytes * static_cast<size_t>(t) / static_cast<size_t>(threads);
        const size_t end = kBytes * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
        std::memcpy(to.data() + begin, from.data() + begin, end - begin);
      });
    for (std::thread& t : pool) t.join();
    best = std::max(best, 2.0 * kBytes / (ms_since(start) / 1000) / 1e9);
  }
  return best;
}

void bench_peak(const BenchOptions& opts) {
  const int threads = opts.threads > 0 ? opts.threads : kiln_num_threads();
  const std::string cpu = compiler::detect_target(opts.target_cpu).cpu;
  const PeakFlops p = measure_peak(threads, 0.3, bench_lanes(opts));
  if (opts.json) {
    nlohmann::ordered_json j;
    j["cpu"] = cpu;
    j["isa"] = p.isa;
    j["lanes"] = p.lanes;
    j["threads"] = p.threads;
    j["gflops_1"] = p.gflops_1;
    j["gflops_n"] = p.gflops_n;
    j["bandwidth_gbps"] = measure_bandwidth(threads);
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("kiln bench --peak: %s, f32 FMA chains on %s vectors (%d lanes)\n", cpu.c_str(), p.isa.c_str(), p.lanes);
  std::printf("  1 thread    %8.1f GFLOP/s\n", p.gflops_1);
  if (threads > 1)
    std::printf("  %d threads   %8.1f GFLOP/s (%.2fx 1 thread)\n", threads, p.gflops_n, p.gflops_n / p.gflops_1);
  std::printf("  memory      %8.1f GB/s read + written, %d thread(s) copying\n", measure_bandwidth(threads), threads);
}

}  // namespace kiln::cli
