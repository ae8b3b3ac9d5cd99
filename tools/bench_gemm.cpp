#include "tools/bench_gemm.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <memory>
#include <optional>

#include "compiler/jit_executable.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/builder.h"
#include "models/transformer/config.h"
#include "ops/matmul.h"
#include "tools/bench_timing.h"
#include "tools/blas_peers.h"

namespace kiln::cli {

std::vector<GemmShape> transformer_gemm_shapes(const std::string& config, int64_t batch, int64_t len, int64_t vocab) {
  const models::TransformerConfig c = models::preset_config(config);
  const int64_t tokens = batch * len, d = c.d_model, ff = c.d_ff;
  return {
      {"x W (q, k, v, out)", 1, tokens, d, d, false, false},
      {"x W1 (ffn up)", 1, tokens, d, ff, false, false},
      {"h W2 (ffn down)", 1, tokens, ff, d, false, false},
      {"h E^T (logits)", 1, tokens, d, vocab, false, true},
      {"dy W^T (d x)", 1, tokens, d, d, false, true},
      {"dy W1^T (d x, ffn)", 1, tokens, ff, d, false, true},
      {"dy W2^T (d h, ffn)", 1, tokens, d, ff, false, true},
      {"dlogits E (d h)", 1, tokens, vocab, d, false, false},
      {"x^T dy (d W)", 1, d, tokens, d, true, false},
      {"x^T dy (d W1)", 1, d, tokens, ff, true, false},
      {"h^T dy (d W2)", 1, ff, tokens, d, true, false},
      {"dlogits^T h (d E)", 1, vocab, tokens, d, true, false},
  };
}

namespace {

// Deterministic values in [-1, 1).
std::vector<float> filled(int64_t count, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(count));
  for (float& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) * 0x1.0p-23f - 1.0f;
  }
  return v;
}

struct Operands {
  std::vector<float> a, b, c;
};

// v's values as a tensor of dtype t (f32, or bf16: rounded).
Tensor as_tensor(const std::vector<float>& v, Shape shape, DType t) {
  Tensor out = Tensor::zeros({t, std::move(shape)});
  if (t == DType::bf16)
    std::transform(v.begin(), v.end(), out.bf16().begin(), [](float x) { return bfloat16(x); });
  else
    std::copy(v.begin(), v.end(), out.f32().begin());
  return out;
}

Shape stored(int64_t batch, int64_t rows, int64_t cols) {
  return batch == 1 ? Shape{rows, cols} : Shape{batch, rows, cols};
}

// The JIT's matmul of operands of dtype t (C is f32 either way).
std::unique_ptr<compiler::JitExecutable> kiln_gemm(const GemmShape& s, const Operands& x, DType t,
                                                   const std::string& target_cpu) {
  Graph g("gemm");
  Builder b(g);
  const Shape a_shape = s.ta ? stored(s.batch, s.k, s.m) : stored(s.batch, s.m, s.k);
  const Shape b_shape = s.tb ? stored(s.batch, s.n, s.k) : stored(s.batch, s.k, s.n);
  b.output(ops::matmul(b, b.input("a", {t, a_shape}), b.input("b", {t, b_shape}), s.ta, s.tb));
  compiler::JitOptions options;
  options.target_cpu = target_cpu;
  auto exe = std::make_unique<compiler::JitExecutable>(g, options);
  exe->bind("a", as_tensor(x.a, a_shape, t));
  exe->bind("b", as_tensor(x.b, b_shape, t));
  return exe;
}

std::string dims(const GemmShape& s) {
  std::string out = s.batch > 1 ? std::to_string(s.batch) + "x " : "";
  out += std::to_string(s.m);
  out += "x";
  out += std::to_string(s.k);
  out += "x";
  out += std::to_string(s.n);
  out += s.ta ? " At" : "";
  out += s.tb ? " Bt" : "";
  return out;
}

}  // namespace

void bench_gemm(const BenchOptions& opts) {
  const int64_t batch = opts.batch > 0 ? opts.batch : (opts.config == "base" ? 16 : 32);
  std::vector<BlasPeer> peers;
  const int lanes = bench_lanes(opts);
  for (auto load : {&BlasPeer::openblas, &BlasPeer::onednn}) {
    std::string why;
    if (std::optional<BlasPeer> p = load(lanes, why)) {
      if (!p->kernels().empty()) std::printf("(%s: %s)\n", p->name().c_str(), p->kernels().c_str());
      peers.push_back(std::move(*p));
    } else
      std::printf("(%s: not compared)\n", why.c_str());
  }
  const int threads = opts.threads > 0 ? opts.threads : kiln_num_threads();
  std::vector<int> counts = {1};
  if (threads > 1) counts.push_back(threads);
  std::printf("\nmatmul GFLOP/s on the products of %s's training step (B=%lld, S=T=%lld, vocab %lld): M x K x N, "
              "%d-lane code\n",
              opts.config.c_str(), static_cast<long long>(batch), static_cast<long long>(opts.tgt_len),
              static_cast<long long>(opts.vocab), lanes);
  // --precision bf16: also kiln's GEMM of bf16 operands (f32 sums), beside the f32 ones.
  const bool bf16 = opts.precision == DType::bf16;
  std::printf("%-20s %-22s %3s %8s", "product", "shape", "thr", "kiln");
  if (bf16) std::printf(" %9s", "kiln bf16");
  for (const BlasPeer& p : peers) std::printf(" %9s", p.name().c_str());
  std::printf("  kiln/best\n");
  const std::vector<GemmShape> shapes = transformer_gemm_shapes(opts.config, batch, opts.tgt_len, opts.vocab);
  // The first shape is measured twice and printed once: a process's first runs
  // are slower (clocks ramping up, the libraries' own first-call set-up).
  for (size_t row = 0; row <= shapes.size(); ++row) {
    const GemmShape& s = shapes[row == 0 ? 0 : row - 1];
    const bool print = row > 0;
    Operands x{filled(s.batch * s.m * s.k, 1), filled(s.batch * s.k * s.n, 2),
               std::vector<float>(static_cast<size_t>(s.batch * s.m * s.n))};
    const std::unique_ptr<compiler::JitExecutable> kiln = kiln_gemm(s, x, DType::f32, opts.target_cpu);
    const std::unique_ptr<compiler::JitExecutable> kiln_bf16 =
        bf16 ? kiln_gemm(s, x, DType::bf16, opts.target_cpu) : nullptr;
    const double flops = 2.0 * static_cast<double>(s.batch * s.m * s.k * s.n);
    for (int t : counts) {
      kiln_set_num_threads(t);
      // Side by side: each library in turn, so the machine's load hits all.
      const double kiln_gflops = flops / (time_runs(*kiln, opts).median_ms * 1e6);
      double best = 0;
      if (print) std::printf("%-20s %-22s %3d %8.1f", s.what.c_str(), dims(s).c_str(), t, kiln_gflops);
      if (bf16) {
        const double gflops = flops / (time_runs(*kiln_bf16, opts).median_ms * 1e6);
        if (print) std::printf(" %9.1f", gflops);
      }
      for (const BlasPeer& p : peers) {
        p.set_threads(t);
        const auto run = [&] {
          for (int64_t i = 0; i < s.batch; ++i)
            p.sgemm(s.ta, s.tb, s.m, s.n, s.k, x.a.data() + i * s.m * s.k, x.b.data() + i * s.k * s.n,
                    x.c.data() + i * s.m * s.n);
        };
        const double gflops = flops / (time_calls(run, opts).median_ms * 1e6);
        // OpenBLAS's and OpenMP's idle workers spin for a while after a parallel
        // call; let them go to sleep before the next library is timed.
        if (t > 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
        best = std::max(best, gflops);
        if (print) std::printf(" %9.1f", gflops);
      }
      if (print) std::printf("  %8.2f\n", best > 0 ? kiln_gflops / best : 0.0);
      std::fflush(stdout);
    }
  }
  kiln_set_num_threads(opts.threads);
}

}  // namespace kiln::cli
