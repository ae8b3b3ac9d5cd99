#pragma once
// `kiln bench --op matmul`: the JIT's matmul on every product a Transformer
// preset's training step computes (forward, both backward products, the tied
// logits and their gradients), side by side with OpenBLAS's and oneDNN's sgemm
// in the same run, at 1 thread and at --threads. (The attention products are
// inside flash_attention's kernels, not matmuls.)
#include <cstdint>
#include <string>
#include <vector>

#include "tools/cmd_bench.h"

namespace kiln::cli {

// C[batch][m,n] = op(A) op(B); A stored [k,m] when ta, B stored [n,k] when tb.
struct GemmShape {
  std::string what;  // where the Transformer computes it
  int64_t batch = 1, m = 0, k = 0, n = 0;
  bool ta = false, tb = false;
};

// The distinct products of a preset's training step for B sentences of T tokens
// (S = T) and a vocabulary, in the order a step meets them.
std::vector<GemmShape> transformer_gemm_shapes(const std::string& config, int64_t batch, int64_t len, int64_t vocab);

void bench_gemm(const BenchOptions& opts);

}  // namespace kiln::cli
