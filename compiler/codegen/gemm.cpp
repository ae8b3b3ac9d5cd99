#include "compiler/codegen/gemm.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

GemmBlocking gemm_blocking(int vector_width) {
  GemmBlocking g;
  g.w = vector_width;
  const int registers = vector_width >= 16 ? 32 : 16;  // AVX-512 has zmm0-31; AVX2 and SSE 16
  g.nr = 2 * vector_width;
  g.mr = (registers - 3) / 2;
  g.kc = vector_width >= 16 ? 1024 : 256;
  g.mc = 16 * g.mr;
  g.nc = (vector_width >= 16 ? 8 : 32) * g.nr;
  return g;
}

llvm::Value* min_i64(LoweringContext& cx, llvm::Value* a, llvm::Value* b) {
  return cx.b().CreateSelect(cx.b().CreateICmpSLT(a, b), a, b);
}

namespace {

llvm::Value* gep(LoweringContext& cx, llvm::Value* base, llvm::Value* offset) {
  return cx.b().CreateInBoundsGEP(cx.b().getFloatTy(), base, offset);
}

// An operand's element `offset` (f32 or bf16).
llvm::Value* operand_gep(LoweringContext& cx, DType t, llvm::Value* base, llvm::Value* offset) {
  return cx.b().CreateInBoundsGEP(cx.mem_type(t), base, offset);
}

llvm::Value* mul(LoweringContext& cx, llvm::Value* a, int64_t b) {
  return b == 1 ? a : cx.b().CreateMul(a, cx.i64c(b), "", true, true);
}

// <W x i64> lanes 0..W-1 plus `first`.
llvm::Value* lane_indices(LoweringContext& cx, int w, int64_t first) {
  std::vector<llvm::Constant*> lanes;
  for (int l = 0; l < w; ++l) lanes.push_back(cx.b().getInt64(static_cast<uint64_t>(first + l)));
  return llvm::ConstantVector::get(lanes);
}

// Lanes whose index first + l is below `bound` (i64, or a constant).
llvm::Value* lanes_below(LoweringContext& cx, int w, int64_t first, llvm::Value* bound) {
  return cx.b().CreateICmpSLT(lane_indices(cx, w, first), cx.splat(bound, w));
}

llvm::Value* add(LoweringContext& cx, llvm::Value* a, llvm::Value* b) { return cx.b().CreateAdd(a, b, "", true, true); }

// W elements of an operand of dtype t as f32, rounded to bf16 if `round` (an
// f32 operand of a bf16 product: GemmProblem).
llvm::Value* load_operand(LoweringContext& cx, DType t, int w, llvm::Value* base, llvm::Value* offset,
                          llvm::Value* mask, bool round) {
  llvm::Value* x = cx.load_stored(t, base, offset, w, mask);
  if (t == DType::bf16) return cx.widen_bf16(x);
  return round ? cx.round_bf16(x) : x;
}

// n elements of an operand of dtype t (bf16, or f32 rounded to it) as bf16 bits, <n x i16>.
llvm::Value* load_halves(LoweringContext& cx, DType t, int n, llvm::Value* base, llvm::Value* offset,
                         llvm::Value* mask) {
  llvm::Value* x = cx.load_stored(t, base, offset, n, mask);
  return t == DType::bf16 ? x : cx.narrow_bf16(cx.round_bf16(x));
}

// With vdpbf16ps (Target::bf16_dot) a bf16 operand is packed as pairs along k:
// the 32 bits of pair (kk, p) hold elements (2kk, p) (low half) and (2kk+1, p),
// so the layout above holds with a pair for a float and ceil(kc/2) for kc, and
// the micro-kernel's dot product of two pairs is one lane of vdpbf16ps. An odd
// kc's last pair is zero-padded in both operands.
int64_t pairs_or_k(bool pairs, int64_t kc) { return pairs ? (kc + 1) / 2 : kc; }
llvm::Value* pairs_or_k(LoweringContext& cx, bool pairs, llvm::Value* kc) {
  return pairs ? cx.b().CreateLShr(cx.b().CreateAdd(kc, cx.i64c(1)), cx.i64c(1)) : kc;
}

// <W x i16> a, b -> the W pairs (a[l], b[l]) as the bits of <W x float>.
llvm::Value* interleave_pairs(LoweringContext& cx, int w, llvm::Value* a, llvm::Value* b) {
  std::vector<int> lanes;
  for (int l = 0; l < w; ++l) lanes.insert(lanes.end(), {l, w + l});
  return cx.b().CreateBitCast(cx.b().CreateShuffleVector(a, b, lanes),
                              llvm::FixedVectorType::get(cx.b().getFloatTy(), static_cast<unsigned>(w)));
}

// p runs along memory: per k (pair of k's), ceil(P/W) masked vector loads
// (lanes past `valid` read as 0) and stores of the panel's P floats (pairs).
// With `sums` (f64, the panel's P columns), each column's kc elements are also
// added to its sum, in f64 vectors carried along k.
void pack_along_p(LoweringContext& cx, const GemmBlocking& g, DType t, bool pairs, bool round, llvm::Value* dst,
                  llvm::Value* src, int64_t stride_k, llvm::Value* kc, llvm::Value* valid, int panel,
                  llvm::Value* sums = nullptr) {
  auto& b = cx.b();
  const llvm::Align store_align(panel % g.w == 0 ? 4 * static_cast<uint64_t>(g.w) : 4);
  auto* doubles = llvm::FixedVectorType::get(b.getDoubleTy(), static_cast<unsigned>(g.w));
  const auto sum_at = [&](int first) { return b.CreateGEP(b.getDoubleTy(), sums, cx.i64c(first)); };
  LoweringContext::Carried column_sums;
  if (sums)
    for (int first = 0; first < panel; first += g.w)
      column_sums.push_back(b.CreateAlignedLoad(doubles, sum_at(first), llvm::Align(8)));
  column_sums = cx.for_range(
      cx.i64c(0), pairs_or_k(cx, pairs, kc), 1, column_sums, [&](llvm::Value* k, const LoweringContext::Carried& in) {
        LoweringContext::Carried next;
        llvm::Value* row = operand_gep(cx, t, src, mul(cx, k, pairs ? 2 * stride_k : stride_k));
        llvm::Value* out = gep(cx, dst, mul(cx, k, panel));
        // The pair's second row, when 2k + 1 < kc (past it: not read, 0).
        llvm::Value* second = pairs ? b.CreateICmpSLT(add(cx, mul(cx, k, 2), cx.i64c(1)), kc) : nullptr;
        for (int first = 0; first < panel; first += g.w) {
          llvm::Value* in_panel = lanes_below(cx, g.w, first, valid);
          llvm::Value* x = nullptr;
          if (pairs) {
            // Not inbounds: the second row of an odd kc's last pair may be past the operand.
            const auto half = [&](int64_t r, llvm::Value* mask) {
              return load_halves(cx, t, g.w, row, cx.i64c(r * stride_k + first), mask);
            };
            x = interleave_pairs(cx, g.w, half(0, in_panel), half(1, b.CreateAnd(in_panel, cx.splat(second, g.w))));
          } else {
            x = load_operand(cx, t, g.w, row, cx.i64c(first), in_panel, round);
          }
          llvm::Value* to = gep(cx, out, cx.i64c(first));
          if (first + g.w <= panel)
            b.CreateAlignedStore(x, to, store_align);
          else
            b.CreateMaskedStore(x, to, store_align, lanes_below(cx, g.w, first, cx.i64c(panel)));
          if (sums) next.push_back(b.CreateFAdd(in[static_cast<size_t>(first / g.w)], b.CreateFPExt(x, doubles)));
        }
        return next;
      });
  for (int first = 0; sums && first < panel; first += g.w)
    b.CreateAlignedStore(column_sums[static_cast<size_t>(first / g.w)], sum_at(first), llvm::Align(8));
}

// The transpose of a W x W block held as W row vectors: log2(W) stages of
// two-input shuffles; the stage with half-width h swaps the off-diagonal h x h
// sub-blocks of every 2h x 2h block.
std::vector<llvm::Value*> transpose(LoweringContext& cx, std::vector<llvm::Value*> rows, int w) {
  for (int h = w / 2; h >= 1; h /= 2) {
    std::vector<int> low(static_cast<size_t>(w)), high(static_cast<size_t>(w));
    for (int l = 0; l < w; ++l) {
      low[static_cast<size_t>(l)] = (l & h) == 0 ? l : w + l - h;
      high[static_cast<size_t>(l)] = (l & h) == 0 ? l + h : w + l;
    }
    for (int i = 0; i < w; ++i) {
      if (i & h) continue;
      llvm::Value* upper = rows[static_cast<size_t>(i)];
      llvm::Value* lower = rows[static_cast<size_t>(i + h)];
      rows[static_cast<size_t>(i)] = cx.b().CreateShuffleVector(upper, lower, low);
      rows[static_cast<size_t>(i + h)] = cx.b().CreateShuffleVector(upper, lower, high);
    }
  }
  return rows;
}

// k runs along memory: the panel's P source rows are taken W at a time, W k's
// (pairs of k's) at a time; each W x W block is loaded as W row vectors (masked
// past `valid` rows and past kc), transposed in registers and stored as W groups
// of P.
void pack_along_k(LoweringContext& cx, const GemmBlocking& g, DType t, bool pairs, bool round, llvm::Value* dst,
                  llvm::Value* src, int64_t stride_p, llvm::Value* kc, llvm::Value* valid, int panel) {
  auto& b = cx.b();
  auto* vec = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(g.w));
  llvm::Value* zero = llvm::Constant::getNullValue(vec);
  const llvm::Align store_align(panel % g.w == 0 ? 4 * static_cast<uint64_t>(g.w) : 4);
  llvm::Value* units = pairs_or_k(cx, pairs, kc);
  cx.for_range(cx.i64c(0), units, g.w, [&](llvm::Value* k0) {
    // The lanes (halves of pairs) of the W units at k0 that are inside kc.
    llvm::Value* k_lanes = pairs ? lanes_below(cx, 2 * g.w, 0, b.CreateSub(kc, mul(cx, k0, 2)))
                                 : lanes_below(cx, g.w, 0, b.CreateSub(kc, k0));
    for (int first = 0; first < panel; first += g.w) {
      std::vector<llvm::Value*> rows;
      for (int r = first; r < first + g.w; ++r) {
        if (r >= panel) {
          rows.push_back(zero);
          continue;
        }
        llvm::Value* row_ok = b.CreateICmpSLT(cx.i64c(r), valid);
        if (pairs) {
          llvm::Value* mask = b.CreateAnd(k_lanes, cx.splat(row_ok, 2 * g.w));
          rows.push_back(b.CreateBitCast(
              load_halves(cx, t, 2 * g.w, src, add(cx, cx.i64c(r * stride_p), mul(cx, k0, 2)), mask), vec));
        } else {
          llvm::Value* mask = b.CreateAnd(k_lanes, cx.splat(row_ok, g.w));
          rows.push_back(load_operand(cx, t, g.w, src, add(cx, cx.i64c(r * stride_p), k0), mask, round));
        }
      }
      const std::vector<llvm::Value*> columns = transpose(cx, std::move(rows), g.w);
      llvm::Value* panel_lanes = lanes_below(cx, g.w, first, cx.i64c(panel));
      for (int l = 0; l < g.w; ++l) {
        llvm::Value* k = add(cx, k0, cx.i64c(l));
        llvm::Value* to = b.CreateGEP(b.getFloatTy(), dst, add(cx, mul(cx, k, panel), cx.i64c(first)));
        llvm::Value* mask = b.CreateAnd(panel_lanes, cx.splat(b.CreateICmpSLT(k, units), g.w));
        b.CreateMaskedStore(columns[static_cast<size_t>(l)], to, store_align, mask);
      }
    }
  });
}

// Defines void NAME(ptr buffers, ptr dst, ptr src, i64 kc, i64 extent), which
// packs kc x extent elements of a source of dtype t with these strides (element
// (k, p) at src + k*stride_k + p*stride_p) into `dst` in panels of `panel` (MR
// or NR), the layout of gemm.h, as f32 (or bf16 pairs), zero-padding the last
// panel. Not inlined: with the block sizes as constants LLVM would unroll the
// copy loops into huge code.
// With `sums` (only for p along memory), NAME takes one more argument, ptr sums:
// f64 [extent rounded up to panels], to which each column's kc elements are added.
// With `round`, the source is f32 and packed as bf16 (rounded).
llvm::Function* define_pack(LoweringContext& cx, const GemmBlocking& g, DType t, bool pairs, bool round,
                            const std::string& name, int64_t stride_k, int64_t stride_p, int panel, bool sums = false) {
  auto& b = cx.b();
  std::vector<llvm::Type*> params = {cx.ptr(), cx.ptr(), cx.i64(), cx.i64()};
  if (sums) params.push_back(cx.ptr());
  llvm::Function* f = cx.define_function(name, params, [&](llvm::Function* f) {
    llvm::Value* dst = f->getArg(1);
    llvm::Value* src = f->getArg(2);
    llvm::Value* kc = f->getArg(3);
    llvm::Value* extent = f->getArg(4);
    llvm::Value* panels = b.CreateUDiv(b.CreateAdd(extent, cx.i64c(panel - 1)), cx.i64c(panel));
    llvm::Value* panel_size = b.CreateMul(pairs_or_k(cx, pairs, kc), cx.i64c(panel), "", true, true);
    cx.for_range(cx.i64c(0), panels, 1, [&](llvm::Value* q) {
      llvm::Value* p0 = mul(cx, q, panel);
      llvm::Value* valid = min_i64(cx, cx.i64c(panel), b.CreateSub(extent, p0));
      llvm::Value* to = gep(cx, dst, b.CreateMul(q, panel_size, "", true, true));
      llvm::Value* from = operand_gep(cx, t, src, mul(cx, p0, stride_p));
      if (stride_p == 1)
        pack_along_p(cx, g, t, pairs, round, to, from, stride_k, kc, valid, panel,
                     sums ? b.CreateGEP(b.getDoubleTy(), f->getArg(5), p0) : nullptr);
      else
        pack_along_k(cx, g, t, pairs, round, to, from, stride_p, kc, valid, panel);
    });
  });
  f->addFnAttr(llvm::Attribute::NoInline);
  return f;
}

// Defines the micro-kernel
//   void NAME(ptr buffers, ptr a, ptr b_panel, ptr c, i64 ldc, i64 kc,
//             i64 rows, i64 cols, i1 accumulate)
// computing C[i, j] (= or +=) sum_k a[i*a_row + k*a_k] * b_panel[k*NR + j] for
// i < rows <= MR, j < cols <= NR; C row i starts at c + i*ldc. A packed panel
// has (a_row, a_k) = (1, MR); a row-major A read in place has (lda, 1), its MR
// rows then addressed from one register with constant displacements. The C tile
// is loaded and stored with masks (column lanes below cols, rows below rows), so
// edge tiles touch nothing outside rows x cols. Not inlined, so its K loop keeps
// a run-time trip count and is not unrolled whole. With `pairs` the floats are
// bf16 pairs (kc counts pairs) and each FMA a vdpbf16ps: an A pair broadcast
// against a B vector of W pairs adds two products to each lane.
llvm::Function* define_micro_kernel(LoweringContext& cx, const GemmBlocking& g, bool pairs, const std::string& name,
                                    int64_t a_row, int64_t a_k) {
  auto& b = cx.b();
  const std::vector<llvm::Type*> params = {cx.ptr(), cx.ptr(), cx.ptr(), cx.i64(),
                                           cx.i64(), cx.i64(), cx.i64(), b.getInt1Ty()};
  llvm::Function* micro = cx.define_function(name, params, [&](llvm::Function* f) {
    const char* names[] = {"buffers", "a", "b_panel", "c", "ldc", "kc", "rows", "cols", "accumulate"};
    for (unsigned i = 0; i < f->arg_size(); ++i) f->getArg(i)->setName(names[i]);
    llvm::Value* a = f->getArg(1);
    llvm::Value* bp = f->getArg(2);
    llvm::Value* c = f->getArg(3);
    llvm::Value* ldc = f->getArg(4);
    llvm::Value* kc = f->getArg(5);
    llvm::Value* rows = f->getArg(6);
    llvm::Value* cols = f->getArg(7);
    llvm::Value* accumulate = f->getArg(8);
    for (unsigned i : {1u, 2u, 3u}) f->addParamAttr(i, llvm::Attribute::NoAlias);

    auto* vec = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(g.w));
    const int vectors = g.nr / g.w;
    const llvm::Align c_align(4), b_align(4 * static_cast<uint64_t>(g.w));
    // The C tile's masks: column lanes below `cols`, rows below `rows`.
    std::vector<llvm::Value*> masks;  // [i * vectors + v]
    std::vector<llvm::Value*> c_rows;
    for (int i = 0; i < g.mr; ++i) {
      llvm::Value* row_ok = b.CreateICmpSLT(cx.i64c(i), rows);
      c_rows.push_back(b.CreateGEP(b.getFloatTy(), c, b.CreateMul(cx.i64c(i), ldc)));
      for (int v = 0; v < vectors; ++v)
        masks.push_back(b.CreateAnd(lanes_below(cx, g.w, v * g.w, cols), cx.splat(row_ok, g.w)));
    }
    const auto c_addr = [&](int i, int v) { return b.CreateGEP(b.getFloatTy(), c_rows[i], cx.i64c(v * g.w)); };

    LoweringContext::Carried acc;
    for (int i = 0; i < g.mr; ++i)
      for (int v = 0; v < vectors; ++v) {
        llvm::Value* load_mask = b.CreateAnd(masks[i * vectors + v], cx.splat(accumulate, g.w));
        acc.push_back(b.CreateMaskedLoad(vec, c_addr(i, v), c_align, load_mask, llvm::Constant::getNullValue(vec)));
      }
    acc = cx.for_range(cx.i64c(0), kc, 1, acc, [&](llvm::Value* k, const LoweringContext::Carried& sums) {
      std::vector<llvm::Value*> bv;
      llvm::Value* b_row = gep(cx, bp, mul(cx, k, g.nr));
      for (int v = 0; v < vectors; ++v)
        bv.push_back(b.CreateAlignedLoad(vec, gep(cx, b_row, cx.i64c(v * g.w)), b_align));
      llvm::Value* a_col = gep(cx, a, mul(cx, k, a_k));
      LoweringContext::Carried next;
      for (int i = 0; i < g.mr; ++i) {
        llvm::Value* ai = b.CreateAlignedLoad(b.getFloatTy(), gep(cx, a_col, cx.i64c(i * a_row)), llvm::Align(4));
        llvm::Value* splat = cx.splat(ai, g.w);
        for (int v = 0; v < vectors; ++v)
          next.push_back(pairs ? dot_bf16_pairs(cx, sums[i * vectors + v], splat, bv[v])
                               : b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec}, {splat, bv[v], sums[i * vectors + v]}));
      }
      return next;
    });
    for (int i = 0; i < g.mr; ++i)
      for (int v = 0; v < vectors; ++v)
        b.CreateMaskedStore(acc[i * vectors + v], c_addr(i, v), c_align, masks[i * vectors + v]);
  });
  micro->addFnAttr(llvm::Attribute::NoInline);
  return micro;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One dimension of C (M or N) cut into `blocks` ranges of whole panels (MR or
// NR) whose panel counts differ by at most one, so parallel tasks get nearly
// equal work.
struct Split {
  int64_t extent = 0, panel = 0, blocks = 0;

  int64_t panels() const { return ceil_div(extent, panel); }
  int64_t largest() const { return ceil_div(panels(), blocks) * panel; }  // elements, for the packing buffers
  // The first index of block i (i64); i == blocks gives the extent.
  llvm::Value* start(LoweringContext& cx, llvm::Value* i) const {
    llvm::Value* first_panel = cx.b().CreateUDiv(mul(cx, i, panels()), cx.i64c(blocks));
    return min_i64(cx, mul(cx, first_panel, panel), cx.i64c(extent));
  }
};

// Blocks of at most MC rows and NC columns; when the product is big enough to
// run in parallel, more of them until the task count is a multiple of the thread
// count or at least 4 per thread, splitting the dimension with the larger blocks.
// The thread count is only a hint for balance: every split gives the same results.
std::pair<Split, Split> split_tasks(const GemmBlocking& g, const GemmProblem& p, int64_t threads) {
  Split m{p.m, g.mr, ceil_div(p.m, g.mc)}, n{p.n, g.nr, ceil_div(p.n, g.nc)};
  const bool parallel = p.batches * p.m * p.n * p.k > LoweringContext::kParallelGrainElements;
  for (int64_t tasks = p.batches * m.blocks * n.blocks; parallel && tasks % threads != 0 && tasks < 4 * threads;
       tasks = p.batches * m.blocks * n.blocks) {
    const bool m_larger = m.largest() >= n.largest();
    if ((m_larger || n.blocks == n.panels()) && m.blocks < m.panels())
      ++m.blocks;
    else if (n.blocks < n.panels())
      ++n.blocks;
    else
      break;
  }
  return {m, n};
}

}  // namespace

llvm::Value* dot_bf16_pairs(LoweringContext& cx, llvm::Value* acc, llvm::Value* a, llvm::Value* b) {
  auto* bf16s = llvm::FixedVectorType::get(cx.b().getBFloatTy(), 32);
  return cx.b().CreateIntrinsic(llvm::Intrinsic::x86_avx512bf16_dpbf16ps_512, {},
                                {acc, cx.b().CreateBitCast(a, bf16s), cx.b().CreateBitCast(b, bf16s)});
}

// Packing buffers live on the stack of the outlined task function (allocas in its
// entry block, 64-byte aligned), sized by the task's blocks: at most (MC + NC) *
// KC floats, 1.9 MiB with AVX-512 (MC = 224, NC = 256, KC = 1024) and 608 KiB
// with AVX2 (MC = 96, NC = 512, KC = 256), well within the default 8 MiB stacks of the runtime's
// threads and the main thread. Nothing is allocated while a kernel runs.
//
// Tasks are numbered (batch, N block, M block) with the M block fastest, and a
// thread runs a contiguous range of them: the tasks of one (batch, N block) in
// its range share B's block, packed once per K block for all their M blocks.
// A row-major A (not transposed) is not packed, unless its rows are a multiple
// of 4 KiB apart: the micro-kernel reads its rows in place; only a last panel of
// fewer than MR rows is packed (zero-padded), so that no read leaves A.
void emit_gemm(LoweringContext& cx, const std::string& name, const GemmProblem& p) {
  if (use_gemm_rows(p)) return emit_gemm_rows(cx, name, p);
  auto& b = cx.b();
  const GemmBlocking g = gemm_blocking(cx.vector_width());
  const auto [m_split, n_split] = split_tasks(g, p, std::max<int64_t>(1, kiln_num_threads()));
  const DType t = p.operands;
  // bf16 operands: pairs for vdpbf16ps where the target has it, else widened to f32 as they are packed.
  const bool pairs = t == DType::bf16 && cx.target().bf16_dot;
  // A K block of pairs holds as many bytes as one of floats, twice the k's.
  const int64_t mc = m_split.largest(), nc = n_split.largest(), kc = std::min(pairs ? 2 * g.kc : g.kc, p.k);
  // A row-major A is read in place as floats, or as pairs when its rows hold whole
  // pairs; but not when its rows are a multiple of 4 KiB apart (k = 1024 or 2048
  // f32s, 2048 bf16s: a Transformer's feed-forward width): the MR rows of a panel
  // then share their L1 sets and 4 KiB aliasing offsets, and on Zen 4 such a
  // product ran at 57-61 GFLOP/s in about half the runs (packed: 82-83).
  // An f32 operand of a bf16 product (a param's bf16 copy the GEMM makes
  // itself) is read as f32 and rounded as it is packed.
  const DType a_memory = p.a_memory.value_or(t), b_memory = p.b_memory.value_or(t);
  const bool round_a = a_memory != t, round_b = b_memory != t;
  if ((round_a || round_b) && t != DType::bf16) throw Error("jit: a GEMM rounds an operand only to bf16");
  const bool a_in_place = !p.ta && !round_a && (t == DType::f32 || (pairs && p.k % 2 == 0)) &&
                          p.k * static_cast<int64_t>(dtype_size(t)) % 4096 != 0;
  llvm::Function* micro = define_micro_kernel(cx, g, pairs, name + ".micro", 1, g.mr);
  llvm::Function* micro_in_place =
      a_in_place ? define_micro_kernel(cx, g, pairs, name + ".micro_a", pairs_or_k(pairs, p.k), 1) : nullptr;
  // Element (k, i) of op(A) at a + k*stride_k + i*stride_p, likewise (k, j) of op(B).
  llvm::Function* pack_a = p.ta ? define_pack(cx, g, a_memory, pairs, round_a, name + ".pack_a", p.m, 1, g.mr)
                                : define_pack(cx, g, a_memory, pairs, round_a, name + ".pack_a", 1, p.k, g.mr);
  llvm::Function* pack_b = p.tb ? define_pack(cx, g, b_memory, pairs, round_b, name + ".pack_b", 1, p.k, g.nr)
                                : define_pack(cx, g, b_memory, pairs, round_b, name + ".pack_b", p.n, 1, g.nr);

  // B's column sums: the thread that runs the first M block of an N block adds
  // them up as it packs B's K blocks, in f64 on its stack, then rounds them.
  const bool column_sums = static_cast<bool>(p.column_sums);
  if (column_sums && (p.batches != 1 || p.tb || t != DType::f32))
    throw Error("jit: a GEMM's column sums of B need one batch, f32 operands and B stored k x n");
  llvm::Function* pack_b_sums =
      column_sums ? define_pack(cx, g, t, pairs, false, name + ".pack_b_sums", p.n, 1, g.nr, true) : nullptr;

  const int64_t m_blocks = m_split.blocks, n_blocks = n_split.blocks, tasks = p.batches * m_blocks * n_blocks;
  cx.parallel_for(
      name + ".tasks", tasks, LoweringContext::grain_for(mc * nc * p.k), [&](llvm::Value* begin, llvm::Value* end) {
        llvm::Value* buffers = cx.buffer_table();
        llvm::Value* a_pack = cx.stack_buffer((a_in_place ? g.mr : mc) * pairs_or_k(pairs, kc), "a_pack");
        llvm::Value* b_pack = cx.stack_buffer(pairs_or_k(pairs, kc) * nc, "b_pack");
        llvm::Value* sums = column_sums ? cx.stack_buffer(2 * nc, "b_sums") : nullptr;  // nc doubles
        // The (batch, N block) pairs of the range, and each pair's M blocks in it.
        llvm::Value* first_pair = b.CreateUDiv(begin, cx.i64c(m_blocks));
        llvm::Value* end_pair = add(cx, b.CreateUDiv(b.CreateSub(end, cx.i64c(1)), cx.i64c(m_blocks)), cx.i64c(1));
        cx.for_range(first_pair, end_pair, 1, [&](llvm::Value* pair) {
          llvm::Value* pair_first = mul(cx, pair, m_blocks);
          llvm::Value* mb_begin = b.CreateSub(b.CreateSelect(b.CreateICmpUGT(begin, pair_first), begin, pair_first),
                                              pair_first);
          llvm::Value* mb_end = b.CreateSub(min_i64(cx, end, add(cx, pair_first, cx.i64c(m_blocks))), pair_first);
          llvm::Value* nb = b.CreateURem(pair, cx.i64c(n_blocks));
          llvm::Value* bi = b.CreateUDiv(pair, cx.i64c(n_blocks));
          llvm::Value* n0 = n_split.start(cx, nb);
          llvm::Value* cols = b.CreateSub(n_split.start(cx, add(cx, nb, cx.i64c(1))), n0);
          llvm::Value* a_matrix = p.a_matrix(bi);
          llvm::Value* b_matrix = p.b_matrix(bi);
          llvm::Value* c_matrix = p.c_matrix(bi);
          // Whether this thread sums this N block's columns of B.
          llvm::Value* sums_here = column_sums ? b.CreateICmpEQ(mb_begin, cx.i64c(0)) : nullptr;
          if (column_sums)
            cx.if_else(
                sums_here, [&] { b.CreateMemSet(sums, b.getInt8(0), static_cast<uint64_t>(nc) * 8, llvm::Align(64)); },
                {}, "zero_sums");
          // The K block at pc; in the last one the epilogue finishes each panel of
          // NR columns right after its micro-kernels, while it is in L1.
          const auto k_block = [&](llvm::Value* pc, bool last) {
            llvm::Value* depth = min_i64(cx, cx.i64c(kc), b.CreateSub(cx.i64c(p.k), pc));
            llvm::Value* units = pairs_or_k(cx, pairs, depth);  // of a packed panel's k groups
            llvm::Value* b_block = operand_gep(cx, b_memory, b_matrix,
                                               p.tb ? add(cx, mul(cx, n0, p.k), pc) : add(cx, mul(cx, pc, p.n), n0));
            const auto pack = [&] { b.CreateCall(pack_b, {buffers, b_pack, b_block, depth, cols}); };
            if (column_sums)
              cx.if_else(
                  sums_here,
                  [&] {
                    b.CreateCall(pack_b_sums, {buffers, b_pack, b_block, depth, cols, sums});
                  },
                  pack, "pack_b");
            else
              pack();
            llvm::Value* accumulate = b.CreateICmpSGT(pc, cx.i64c(0));
            if (p.accumulate) accumulate = b.CreateOr(accumulate, p.accumulate());
            cx.for_range(mb_begin, mb_end, 1, [&](llvm::Value* mb) {
              llvm::Value* m0 = m_split.start(cx, mb);
              llvm::Value* rows = b.CreateSub(m_split.start(cx, add(cx, mb, cx.i64c(1))), m0);
              // The block's first element, (pc, m0) of op(A).
              llvm::Value* a_block = operand_gep(cx, a_memory, a_matrix,
                                                 p.ta ? add(cx, mul(cx, pc, p.m), m0) : add(cx, mul(cx, m0, p.k), pc));
              // Rows read in place: the whole panels of MR.
              llvm::Value* whole = a_in_place ? b.CreateSub(rows, b.CreateURem(rows, cx.i64c(g.mr))) : cx.i64c(0);
              b.CreateCall(pack_a, {buffers, a_pack, operand_gep(cx, a_memory, a_block, mul(cx, whole, p.k)), depth,
                                    b.CreateSub(rows, whole)});
              llvm::Value* c_block = gep(cx, c_matrix, add(cx, mul(cx, m0, p.n), n0));
              cx.for_range(cx.i64c(0), cols, g.nr, [&](llvm::Value* jr) {
                llvm::Value* panel_cols = min_i64(cx, cx.i64c(g.nr), b.CreateSub(cols, jr));
                cx.for_range(cx.i64c(0), rows, g.mr, [&](llvm::Value* ir) {
                  llvm::Value* kernel = micro;
                  llvm::Value* a_panel = gep(cx, a_pack, b.CreateMul(b.CreateSub(ir, whole), units));
                  if (a_in_place) {
                    llvm::Value* in_place = b.CreateICmpSLT(ir, whole);
                    kernel = b.CreateSelect(in_place, micro_in_place, micro);
                    a_panel = b.CreateSelect(in_place, operand_gep(cx, a_memory, a_block, mul(cx, ir, p.k)), a_pack);
                  }
                  b.CreateCall(micro->getFunctionType(), kernel,
                               {buffers, a_panel, gep(cx, b_pack, b.CreateMul(jr, units)),
                                gep(cx, c_block, add(cx, mul(cx, ir, p.n), jr)), cx.i64c(p.n), units,
                                min_i64(cx, cx.i64c(g.mr), b.CreateSub(rows, ir)), panel_cols, accumulate});
                });
                if (last && p.epilogue) p.epilogue(bi, m0, rows, add(cx, n0, jr), panel_cols);
              });
            });
          };
          const int64_t last_pc = (p.k - 1) / kc * kc;
          cx.for_range(0, last_pc, kc, [&](llvm::Value* pc) { k_block(pc, false); });
          k_block(cx.i64c(last_pc), true);
          if (column_sums)
            cx.if_else(
                sums_here,
                [&] {
                  llvm::Value* out = gep(cx, p.column_sums(), n0);
                  cx.for_range(cx.i64c(0), cols, 1, [&](llvm::Value* j) {
                    llvm::Value* sum =
                        b.CreateAlignedLoad(b.getDoubleTy(), b.CreateGEP(b.getDoubleTy(), sums, j), llvm::Align(8));
                    b.CreateAlignedStore(b.CreateFPTrunc(sum, b.getFloatTy()), gep(cx, out, j), llvm::Align(4));
                  });
                },
                {}, "store_sums");
        });
      });
}

}  // namespace kiln::compiler
