#include "compiler/codegen/gemm.h"

#include <algorithm>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <vector>

namespace kiln::compiler {

GemmBlocking gemm_blocking(int vector_width) {
  GemmBlocking g;
  g.w = vector_width;
  const int registers = vector_width >= 16 ? 32 : 16;  // AVX-512 has zmm0-31; AVX2 and SSE 16
  g.nr = 2 * vector_width;
  g.mr = (registers - 3) / 2;
  g.kc = 256;
  g.mc = 8 * g.mr;
  g.nc = 8 * g.nr;
  return g;
}

namespace {

// Element (k, p) of a panel source sits at base + k*stride_k + p*stride_p (floats).
// One of the strides is 1 for matmul's operands: p runs along memory (A
// transposed, B plain) or k does (A plain, B transposed).
struct PanelSource {
  llvm::Value* base;
  int64_t stride_k;
  int64_t stride_p;
};

llvm::Value* min_i64(LoweringContext& cx, llvm::Value* a, llvm::Value* b) {
  return cx.b().CreateSelect(cx.b().CreateICmpSLT(a, b), a, b);
}

llvm::Value* gep(LoweringContext& cx, llvm::Value* base, llvm::Value* offset) {
  return cx.b().CreateInBoundsGEP(cx.b().getFloatTy(), base, offset);
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

// p runs along memory: per k, ceil(P/W) masked vector loads (lanes past `valid`
// read as 0) and stores of the panel's P floats.
void pack_along_p(LoweringContext& cx, const GemmBlocking& g, llvm::Value* dst, llvm::Value* src, int64_t stride_k,
                  llvm::Value* kc, llvm::Value* valid, int panel) {
  auto& b = cx.b();
  auto* vec = llvm::FixedVectorType::get(b.getFloatTy(), static_cast<unsigned>(g.w));
  const llvm::Align store_align(panel % g.w == 0 ? 4 * static_cast<uint64_t>(g.w) : 4);
  cx.for_range(cx.i64c(0), kc, 1, [&](llvm::Value* k) {
    llvm::Value* row = gep(cx, src, mul(cx, k, stride_k));
    llvm::Value* out = gep(cx, dst, mul(cx, k, panel));
    for (int first = 0; first < panel; first += g.w) {
      // Not inbounds: past `valid` the address may leave the operand (those lanes are not read).
      llvm::Value* from = b.CreateGEP(b.getFloatTy(), row, cx.i64c(first));
      llvm::Value* x = b.CreateMaskedLoad(vec, from, llvm::Align(4),
                                          lanes_below(cx, g.w, first, valid), llvm::Constant::getNullValue(vec));
      llvm::Value* to = gep(cx, out, cx.i64c(first));
      if (first + g.w <= panel)
        b.CreateAlignedStore(x, to, store_align);
      else
        b.CreateMaskedStore(x, to, store_align, lanes_below(cx, g.w, first, cx.i64c(panel)));
    }
  });
}

// k runs along memory: each of the `valid` source rows is read in order and
// scattered with stride P; the padding rows p >= valid are zeroed.
void pack_along_k(LoweringContext& cx, llvm::Value* dst, llvm::Value* src, int64_t stride_p, llvm::Value* kc,
                  llvm::Value* valid, int panel) {
  auto& b = cx.b();
  cx.for_range(cx.i64c(0), valid, 1, [&](llvm::Value* p) {
    llvm::Value* row = gep(cx, src, mul(cx, p, stride_p));
    llvm::Value* out = gep(cx, dst, p);
    cx.for_range(cx.i64c(0), kc, 1, [&](llvm::Value* k) {
      llvm::Value* x = b.CreateAlignedLoad(b.getFloatTy(), gep(cx, row, k), llvm::Align(4));
      b.CreateAlignedStore(x, gep(cx, out, mul(cx, k, panel)), llvm::Align(4));
    });
  });
  cx.for_range(valid, cx.i64c(panel), 1, [&](llvm::Value* p) {
    llvm::Value* out = gep(cx, dst, p);
    cx.for_range(cx.i64c(0), kc, 1, [&](llvm::Value* k) {
      b.CreateAlignedStore(cx.f32c(0.0f), gep(cx, out, mul(cx, k, panel)), llvm::Align(4));
    });
  });
}

// Packs kc (i64) x extent (i64) elements of `src` into `dst` in panels of
// `panel` (MR or NR), the layout of gemm.h, zero-padding the last panel.
void emit_pack(LoweringContext& cx, const GemmBlocking& g, llvm::Value* dst, const PanelSource& src,
               llvm::Value* kc, llvm::Value* extent, int panel) {
  auto& b = cx.b();
  llvm::Value* panels = b.CreateUDiv(b.CreateAdd(extent, cx.i64c(panel - 1)), cx.i64c(panel));
  llvm::Value* panel_size = b.CreateMul(kc, cx.i64c(panel), "", true, true);
  cx.for_range(cx.i64c(0), panels, 1, [&](llvm::Value* q) {
    llvm::Value* p0 = mul(cx, q, panel);
    llvm::Value* valid = min_i64(cx, cx.i64c(panel), b.CreateSub(extent, p0));
    llvm::Value* to = gep(cx, dst, b.CreateMul(q, panel_size, "", true, true));
    llvm::Value* from = gep(cx, src.base, mul(cx, p0, src.stride_p));
    if (src.stride_p == 1)
      pack_along_p(cx, g, to, from, src.stride_k, kc, valid, panel);
    else
      pack_along_k(cx, to, from, src.stride_p, kc, valid, panel);
  });
}

// Defines the micro-kernel
//   void NAME(ptr buffers, ptr a_panel, ptr b_panel, ptr c, i64 ldc, i64 kc,
//             i64 rows, i64 cols, i1 accumulate)
// computing C[i, j] (= or +=) sum_k a_panel[k*MR + i] * b_panel[k*NR + j] for
// i < rows <= MR, j < cols <= NR; C row i starts at c + i*ldc. The C tile is
// loaded and stored with masks (column lanes below cols, rows below rows), so
// edge tiles touch nothing outside rows x cols.
llvm::Function* define_micro_kernel(LoweringContext& cx, const GemmBlocking& g, const std::string& name) {
  auto& b = cx.b();
  const std::vector<llvm::Type*> params = {cx.ptr(), cx.ptr(), cx.ptr(), cx.i64(), cx.i64(),
                                           cx.i64(), cx.i64(), b.getInt1Ty()};
  return cx.define_function(name, params, [&](llvm::Function* f) {
    llvm::Value* a = f->getArg(1);
    llvm::Value* bp = f->getArg(2);
    llvm::Value* c = f->getArg(3);
    llvm::Value* ldc = f->getArg(4);
    llvm::Value* kc = f->getArg(5);
    llvm::Value* rows = f->getArg(6);
    llvm::Value* cols = f->getArg(7);
    llvm::Value* accumulate = f->getArg(8);
    for (auto [arg, name] : {std::pair{a, "a_panel"}, {bp, "b_panel"}, {c, "c"}, {ldc, "ldc"}, {kc, "kc"},
                             {rows, "rows"}, {cols, "cols"}, {accumulate, "accumulate"}})
      arg->setName(name);
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
      llvm::Value* a_col = gep(cx, a, mul(cx, k, g.mr));
      LoweringContext::Carried next;
      for (int i = 0; i < g.mr; ++i) {
        llvm::Value* ai = b.CreateAlignedLoad(b.getFloatTy(), gep(cx, a_col, cx.i64c(i)), llvm::Align(4));
        llvm::Value* splat = cx.splat(ai, g.w);
        for (int v = 0; v < vectors; ++v)
          next.push_back(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec}, {splat, bv[v], sums[i * vectors + v]}));
      }
      return next;
    });
    for (int i = 0; i < g.mr; ++i)
      for (int v = 0; v < vectors; ++v) b.CreateMaskedStore(acc[i * vectors + v], c_addr(i, v), c_align, masks[i * vectors + v]);
  });
}

// A float buffer of `count` elements in the entry block of the function being
// emitted, so it is allocated once per call, not per loop iteration.
llvm::Value* entry_buffer(LoweringContext& cx, int64_t count, const char* name) {
  llvm::BasicBlock& entry = cx.b().GetInsertBlock()->getParent()->getEntryBlock();
  llvm::IRBuilder<> at_entry(&entry, entry.begin());
  llvm::AllocaInst* buffer = at_entry.CreateAlloca(at_entry.getFloatTy(), cx.i64c(count), name);
  buffer->setAlignment(llvm::Align(64));
  return buffer;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace

// Packing buffers live on the stack of the outlined task function (allocas in its
// entry block, 64-byte aligned), sized by the blocks clamped to the matrices: at
// most (MC + NC) * KC floats, 368 KiB with AVX-512 (MC = 112, NC = 256, KC = 256)
// and 144 KiB with AVX2, well within the default 8 MiB thread stacks. Nothing is
// allocated while a kernel runs.
void emit_gemm(LoweringContext& cx, const std::string& name, const GemmProblem& p) {
  auto& b = cx.b();
  const GemmBlocking g = gemm_blocking(cx.vector_width());
  // Blocks no larger than the matrices (in whole panels), so small products use small buffers.
  const int64_t mc = std::min(g.mc, round_up(p.m, g.mr)), nc = std::min(g.nc, round_up(p.n, g.nr));
  const int64_t kc = std::min(g.kc, p.k);
  const int64_t m_blocks = ceil_div(p.m, mc), n_blocks = ceil_div(p.n, nc);
  llvm::Function* micro = define_micro_kernel(cx, g, name + ".micro");

  const int64_t tasks = p.batches * m_blocks * n_blocks;
  cx.parallel_for(name + ".tasks", tasks, LoweringContext::grain_for(mc * nc * p.k),
                  [&](llvm::Value* begin, llvm::Value* end) {
    llvm::Value* buffers = b.GetInsertBlock()->getParent()->getArg(0);
    llvm::Value* a_pack = entry_buffer(cx, mc * kc, "a_pack");
    llvm::Value* b_pack = entry_buffer(cx, kc * nc, "b_pack");
    cx.for_range(begin, end, 1, [&](llvm::Value* task) {
      llvm::Value* nb = b.CreateURem(task, cx.i64c(n_blocks));
      llvm::Value* rest = b.CreateUDiv(task, cx.i64c(n_blocks));
      llvm::Value* mb = b.CreateURem(rest, cx.i64c(m_blocks));
      llvm::Value* bi = b.CreateUDiv(rest, cx.i64c(m_blocks));
      llvm::Value* m0 = mul(cx, mb, mc);
      llvm::Value* n0 = mul(cx, nb, nc);
      llvm::Value* rows = min_i64(cx, cx.i64c(mc), b.CreateSub(cx.i64c(p.m), m0));
      llvm::Value* cols = min_i64(cx, cx.i64c(nc), b.CreateSub(cx.i64c(p.n), n0));
      llvm::Value* a_matrix = p.a_matrix(bi);
      llvm::Value* b_matrix = p.b_matrix(bi);
      llvm::Value* c_block = gep(cx, p.c_matrix(bi), add(cx, mul(cx, m0, p.n), n0));
      cx.for_range(0, p.k, kc, [&](llvm::Value* pc) {
        llvm::Value* depth = min_i64(cx, cx.i64c(kc), b.CreateSub(cx.i64c(p.k), pc));
        // Element (k, i) of op(A)'s block and (k, j) of op(B)'s, in memory.
        const PanelSource a_src = p.ta ? PanelSource{gep(cx, a_matrix, add(cx, mul(cx, pc, p.m), m0)), p.m, 1}
                                       : PanelSource{gep(cx, a_matrix, add(cx, mul(cx, m0, p.k), pc)), 1, p.k};
        const PanelSource b_src = p.tb ? PanelSource{gep(cx, b_matrix, add(cx, mul(cx, n0, p.k), pc)), 1, p.k}
                                       : PanelSource{gep(cx, b_matrix, add(cx, mul(cx, pc, p.n), n0)), p.n, 1};
        emit_pack(cx, g, a_pack, a_src, depth, rows, g.mr);
        emit_pack(cx, g, b_pack, b_src, depth, cols, g.nr);
        llvm::Value* accumulate = b.CreateICmpSGT(pc, cx.i64c(0));
        cx.for_range(cx.i64c(0), cols, g.nr, [&](llvm::Value* jr) {
          cx.for_range(cx.i64c(0), rows, g.mr, [&](llvm::Value* ir) {
            b.CreateCall(micro, {buffers, gep(cx, a_pack, b.CreateMul(ir, depth)), gep(cx, b_pack, b.CreateMul(jr, depth)),
                                 gep(cx, c_block, add(cx, mul(cx, ir, p.n), jr)), cx.i64c(p.n), depth,
                                 min_i64(cx, cx.i64c(g.mr), b.CreateSub(rows, ir)),
                                 min_i64(cx, cx.i64c(g.nr), b.CreateSub(cols, jr)), accumulate});
          });
        });
      });
    });
  });
}

}  // namespace kiln::compiler
