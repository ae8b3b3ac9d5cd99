#pragma once
// A GotoBLAS/BLIS-style f32 GEMM generated as LLVM IR: cache-blocking loops run
// in parallel tasks, operand panels packed into contiguous buffers, and an
// MR x NR register-blocked micro-kernel with explicit <W x float> vectors.
//
//   parallel task (batch, M block of MC rows, N block of NC columns):
//     for each K block of KC:
//       pack the A block (MC x KC) into MR-row panels    } transposes and batch
//       pack the B block (KC x NC) into NR-column panels } broadcasting end here
//       for each NR panel of B: for each MR panel of A: micro-kernel on C's tile
//                               (last K block: then the epilogue on the panel)
//     (with column sums of B: the thread running an N block's first M block
//      adds B's rows into f64 sums as it packs them, and rounds them at the end)
//
// Packed layout (one layout whatever the operand's transpose flag): a block of
// `extent` rows (A) or columns (B) times kc is cut into panels of P = MR (A) or
// NR (B) along the extent; panel q holds kc groups of P consecutive floats,
//   packed[q*P*kc + k*P + p] = element (k, q*P + p),
// zero-padded past the extent, so the micro-kernel reads both operands as
// unit-stride streams and edge tiles need no special arithmetic.
//
// Summation order: the micro-kernel starts each C element from 0 (first K block)
// or from C itself (later blocks) and adds a[i,k]*b[k,j] for k in order with
// llvm.fmuladd, so every element is one fixed chain over k, whatever the tiling
// or the thread that computes it.
//
// bf16 operands on a CPU where vdpbf16ps outruns f32 FMAs (Target::bf16_dot: Zen
// 4 and 5) stay bf16: they are packed as pairs of k's (gemm.cpp) and vdpbf16ps
// adds two exact products to each f32 lane, at twice the f32 FMA's rate (its
// denormal inputs and results are zero). Elsewhere (Intel's avx512_bf16 CPUs
// too, where it runs at half that rate) they are widened to f32 as they are packed.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "compiler/codegen/lowering_context.h"
#include "compiler/gemm_shapes.h"

namespace kiln::compiler {

// Register tile and cache blocks for a vector width W (f32 lanes).
//   NR = 2W columns: two vectors per row, so each broadcast of an A element
//        feeds two FMAs;
//   MR = (registers - 3) / 2 rows: MR x 2 accumulators plus two B vectors and one
//        A broadcast fill the register file without spills: with AVX-512's 32
//        registers MR = 14 (28 accumulators, a 14 x 32 tile), with the 16 of
//        AVX2 or SSE MR = 6 (12 accumulators, 6 x 16). The K loop then does 2
//        vector loads and MR broadcasts per 2 MR FMAs, well within two loads
//        a cycle, and 2 MR independent FMA chains hide the FMA latency;
//   KC = 1024 with AVX-512, 256 with AVX2 or SSE: the depth of a K block; a B
//        micro-panel (KC x NR) is reused from L2 (L1 with KC = 256) across the
//        MR panels of the A block, and C is loaded and stored once per K block.
//        On Zen 4 (1 MiB of L2 a core) KC = 1024 against 256 made the products
//        of 1024 or more k's of the Transformer steps 5-25% faster in `kiln
//        bench --op matmul` (a weight gradient, x^T dy over 1024 tokens, 78 ->
//        100 GFLOP/s; bf16 139 -> 201) and the others no slower; 2048 was no
//        better. The smaller L2s of AVX2 machines keep 256;
//   MC = 16 MR, NC = 8 NR (32 NR with AVX2 and SSE): the most rows and columns
//        packed per block; the A block (MC x KC) is reused across NC columns,
//        the B block across MC rows, and larger blocks pack each element fewer
//        times. In a single-thread sweep on Zen 4 (KC 128-512, MC 8-24 MR, NC
//        4-16 NR) this choice was within 5% of the best whose buffers fit in
//        0.5 MiB of stack, and 10% faster than KC = 256, MC = 8 MR, NC = 4 NR.
//        AVX2's 16-column panels made NC = 8 NR only 128 columns: a transposed
//        A was packed again for every 128 columns of C. With 32 NR (512) the
//        AVX2 GEMMs of the small and base steps went from 0.87-0.89 to
//        0.91-0.94 of the better of OpenBLAS and oneDNN on average (`kiln bench
//        --op matmul --target-cpu znver3 --cpu-time` on Sapphire Rapids, two
//        rounds; 64 NR no better).
struct GemmBlocking {
  int w = 0;  // f32 lanes of a vector
  int mr = 0, nr = 0;
  int64_t kc = 0, mc = 0, nc = 0;
};
GemmBlocking gemm_blocking(int vector_width);

// C = op(A) op(B) for `batches` independent triples of row-major matrices:
// op(A) is m x k (A stored k x m when ta), op(B) k x n (B stored n x k when tb),
// C m x n. The callbacks map a batch index (i64) to the first float of that
// batch's matrix; they are called inside the outlined task function, where
// buffer pointers must be asked for again (cx.buffer), and may map several
// batches to one matrix (broadcasting). Requires m, n, k >= 1.
// `epilogue`, if set, is called in the last K block of each task right after
// the micro-kernels have finished a panel of C (at most NR columns), with the
// batch index and the panel's rows m0..m0+rows and columns n0..n0+cols (i64),
// to finish those elements while they are in L1.
struct GemmProblem {
  int64_t batches = 1, m = 0, n = 0, k = 0;
  bool ta = false, tb = false;
  // A's and B's dtype: f32, or bf16, widened to f32 as it is packed (or, by
  // emit_gemm_rows, as it is loaded); the products and sums are f32, C is f32.
  DType operands = DType::f32;
  // If set, the dtype A (B) is stored in, when it differs from `operands`: f32
  // for a bf16 product, rounded as it is packed (the cast of a param to bf16
  // fused into the GEMM: no bf16 copy in memory). Not for emit_gemm_rows.
  std::optional<DType> a_memory, b_memory;
  std::function<llvm::Value*(llvm::Value*)> a_matrix, b_matrix, c_matrix;
  std::function<void(llvm::Value* batch, llvm::Value* m0, llvm::Value* rows, llvm::Value* n0, llvm::Value* cols)>
      epilogue;
  // If set (one batch, f32 operands, B stored k x n), the first float of an f32
  // [n] that receives the sums of B's rows (a bias gradient beside x^T dy),
  // added up in f64 as B is packed and rounded once: B is read once for both.
  std::function<llvm::Value*()> column_sums;
  // If set, an i1 asked for in each task: where it holds, C += op(A) op(B)
  // (the first K block starts from C's values instead of 0). Not for emit_gemm_rows.
  std::function<llvm::Value*()> accumulate;
};

// Emits the blocked, parallel GEMM at the builder's position. `name` prefixes
// the outlined functions. A problem of few rows against a B stored n x k takes
// emit_gemm_rows instead. (A B stored k x n read in place for few rows, without
// packing, was measured slower: its rows, ldb floats apart, alias in L1.)
void emit_gemm(LoweringContext& cx, const std::string& name, const GemmProblem& p);

// At most kGemmRowsMaxM rows of a row-major A (not ta) times a B stored n x k
// (tb), as dot products of rows read in place (gemm_rows.cpp): a decoder step's
// product with the tied embeddings (kGemmRowsMaxM: gemm_shapes.h).
bool use_gemm_rows(const GemmProblem& p);
void emit_gemm_rows(LoweringContext& cx, const std::string& name, const GemmProblem& p);

// acc (<16 x float>) + the dot products of the bf16 pairs in a's and b's lanes
// (each <16 x float> holding pairs' bits): vdpbf16ps, for both GEMMs.
llvm::Value* dot_bf16_pairs(LoweringContext& cx, llvm::Value* acc, llvm::Value* a, llvm::Value* b);

// The smaller of two i64 values (the GEMMs' block bounds). One definition for
// both GEMMs, which a unity build compiles as one file.
llvm::Value* min_i64(LoweringContext& cx, llvm::Value* a, llvm::Value* b);

}  // namespace kiln::compiler
