// The GEMM of a few rows against a B stored n x k (gemm.h, emit_gemm's choice):
// C[m, n] = sum_k A[m, k] B[n, k], each element the dot product of a row of A
// and a row of B, both read in place along k. A decoder's step multiplies a
// batch of a few sentences' states by the tied embeddings (m = 16 rows, B the
// 8000 x 128 vocabulary): the packed GEMM packed all of B at every step, read
// and written, for a product that uses each element of B m times, and spent more
// in packing than in multiplying. Here each row of B comes from memory once.
//
// Work unit: `unit` columns of C (whole tiles of NT), all m rows; a tile of MT
// rows by NT columns, MT x NT = W, keeps W vector accumulators over k (W k's at
// a time, the tail masked), then sums all their lanes at once, pairwise in
// log2(W) stages of shuffles and adds, into one vector whose lane i*NT + j is
// element (i, j). Rows and columns past the edge read the last row or column
// instead (in bounds; their sums are not stored). Summation order, per element:
// W lane chains over k, then a fixed pairwise tree over the lanes, whatever the
// threads. bf16 rows with vdpbf16ps (gemm.h) are read 2W at a time, as W pairs.
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <vector>

#include "compiler/codegen/gemm.h"
#include "engine/ir/error.h"

namespace kiln::compiler {
namespace {

llvm::Value* mul_add(LoweringContext& cx, llvm::Value* a, int64_t b, llvm::Value* c) {
  return cx.b().CreateAdd(cx.b().CreateMul(a, cx.i64c(b), "", true, true), c, "", true, true);
}

}  // namespace

bool use_gemm_rows(const GemmProblem& p) { return !p.ta && p.tb && p.m <= kGemmRowsMaxM; }

void emit_gemm_rows(LoweringContext& cx, const std::string& name, const GemmProblem& p) {
  if (p.a_memory || p.b_memory) throw Error("jit: the few-rows GEMM reads its operands as they are stored");
  if (p.accumulate) throw Error("jit: the few-rows GEMM does not add to C");
  auto& b = cx.b();
  const int w = cx.vector_width();
  // W accumulators, MT rows of A and NT rows of B in registers: 14 of AVX2's
  // 16 (2 x 4), 24 of AVX-512's 32 (4 x 4), 8 of SSE's 16 (2 x 2).
  const int mt = w >= 16 ? 4 : 2, nt = w / mt;
  const int64_t unit = nt * ((2 * w + nt - 1) / nt);  // columns per work unit: whole tiles, at least 2W
  const bool pairs = p.operands == DType::bf16 && cx.target().bf16_dot;
  const int step_k = pairs ? 2 * w : w;  // k's per step: W floats, or W pairs
  const int64_t units = (p.n + unit - 1) / unit, k_main = p.k / step_k * step_k;
  auto* vec = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(w));
  auto* in_memory = llvm::FixedVectorType::get(cx.mem_type(p.operands), static_cast<unsigned>(step_k));
  cx.parallel_for(name + ".rows", p.batches * units, LoweringContext::grain_for(p.m * unit * p.k),
                  [&](llvm::Value* begin, llvm::Value* end) {
    cx.for_range(begin, end, 1, [&](llvm::Value* u) {
      llvm::Value* bi = b.CreateUDiv(u, cx.i64c(units));
      llvm::Value* n_begin = b.CreateMul(b.CreateURem(u, cx.i64c(units)), cx.i64c(unit), "n_begin", true, true);
      llvm::Value* n_end = min_i64(cx, b.CreateAdd(n_begin, cx.i64c(unit)), cx.i64c(p.n));
      llvm::Value* a = p.a_matrix(bi);
      llvm::Value* bm = p.b_matrix(bi);
      llvm::Value* c = p.c_matrix(bi);
      cx.for_range(n_begin, n_end, nt, [&](llvm::Value* n0) {
        cx.for_range(0, p.m, mt, [&](llvm::Value* m0) {
          std::vector<llvm::Value*> a_rows, b_rows;  // clamped to the last row / column
          llvm::Type* elem = cx.mem_type(p.operands);
          for (int i = 0; i < mt; ++i)
            a_rows.push_back(b.CreateInBoundsGEP(
                elem, a, b.CreateMul(min_i64(cx, b.CreateAdd(m0, cx.i64c(i)), cx.i64c(p.m - 1)),
                                               cx.i64c(p.k))));
          for (int j = 0; j < nt; ++j)
            b_rows.push_back(b.CreateInBoundsGEP(
                elem, bm, b.CreateMul(min_i64(cx, b.CreateAdd(n0, cx.i64c(j)), cx.i64c(p.n - 1)),
                                                cx.i64c(p.k))));
          // One step of step_k k's at k0, `lanes` of them valid.
          const auto step = [&](llvm::Value* k0, int lanes, const LoweringContext::Carried& sums) {
            // W elements as f32 (a bf16 operand widened), or W pairs' bits.
            const auto load = [&](llvm::Value* row) {
              llvm::Value* at = b.CreateInBoundsGEP(elem, row, k0);
              const llvm::Align align(dtype_size(p.operands));
              llvm::Value* x = nullptr;
              if (lanes == step_k) {
                x = b.CreateAlignedLoad(in_memory, at, align);
              } else {
                std::vector<llvm::Constant*> bits;
                for (int l = 0; l < step_k; ++l) bits.push_back(b.getInt1(l < lanes));
                x = b.CreateMaskedLoad(in_memory, at, align, llvm::ConstantVector::get(bits),
                                       llvm::Constant::getNullValue(in_memory));
              }
              if (pairs) return b.CreateBitCast(x, vec);
              return p.operands == DType::bf16 ? cx.widen_bf16(x) : x;
            };
            std::vector<llvm::Value*> av, bv;
            for (llvm::Value* r : a_rows) av.push_back(load(r));
            for (llvm::Value* r : b_rows) bv.push_back(load(r));
            LoweringContext::Carried next;
            for (int i = 0; i < mt; ++i)
              for (int j = 0; j < nt; ++j)
                next.push_back(pairs ? dot_bf16_pairs(cx, sums[static_cast<size_t>(i * nt + j)],
                                                      av[static_cast<size_t>(i)], bv[static_cast<size_t>(j)])
                                     : b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec},
                                                         {av[static_cast<size_t>(i)], bv[static_cast<size_t>(j)],
                                                          sums[static_cast<size_t>(i * nt + j)]}));
            return next;
          };
          LoweringContext::Carried acc(static_cast<size_t>(mt * nt), llvm::Constant::getNullValue(vec));
          acc = cx.for_range(0, k_main, step_k, acc, [&](llvm::Value* k0, const LoweringContext::Carried& sums) {
            return step(k0, step_k, sums);
          });
          if (k_main < p.k) acc = step(cx.i64c(k_main), static_cast<int>(p.k - k_main), acc);
          // Row i's NT sums, lanes i*NT .., as one masked store of the columns below the edge.
          llvm::Value* sums = cx.sum_lanes(acc);
          llvm::Value* cols = b.CreateSub(min_i64(cx, b.CreateAdd(n0, cx.i64c(nt)), cx.i64c(p.n)), n0);
          std::vector<llvm::Constant*> columns;
          for (int j = 0; j < nt; ++j) columns.push_back(b.getInt64(static_cast<uint64_t>(j)));
          llvm::Value* in_columns = b.CreateICmpSLT(llvm::ConstantVector::get(columns), cx.splat(cols, nt));
          for (int i = 0; i < mt; ++i) {
            llvm::Value* row = b.CreateAdd(m0, cx.i64c(i));
            std::vector<int> lanes;
            for (int j = 0; j < nt; ++j) lanes.push_back(i * nt + j);
            llvm::Value* mask = b.CreateAnd(in_columns, cx.splat(b.CreateICmpSLT(row, cx.i64c(p.m)), nt));
            // Not inbounds: a row past the edge is not stored, but its address may leave C.
            llvm::Value* at = b.CreateGEP(b.getFloatTy(), c, mul_add(cx, row, p.n, n0));
            b.CreateMaskedStore(b.CreateShuffleVector(sums, lanes), at, llvm::Align(4), mask);
          }
        });
      });
      if (p.epilogue) p.epilogue(bi, cx.i64c(0), cx.i64c(p.m), n_begin, b.CreateSub(n_end, n_begin));
    });
  });
}

}  // namespace kiln::compiler
