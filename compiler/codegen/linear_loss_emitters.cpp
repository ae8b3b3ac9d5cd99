// linear_cross_entropy(h, w, labels) and linear_cross_entropy_backward(h, w,
// labels, lse, dloss) (ops/loss.h) as kernels that never hold the [N, V] logits,
// and linear_cross_entropy_train(h, w, labels, dloss), the two at once.
//
// All three walk h in blocks of R rows (rows_per_block: R x V floats of scratch,
// kiln_scratch, about kScratchBytes) and make each block's logits X = h_r w^T with
// the packed GEMM (gemm.h) into that scratch:
//   forward:  then, a parallel loop over the block's rows: the row's
//             cross-entropy (row_cross_entropy.h) and its log-sum-exp, stored;
//             the rows' losses go to scratch too and are added in row order at
//             the end, so the result does not depend on the thread count;
//   backward: the GEMM's epilogue turns each panel of X, while it is in L1, into
//             the logits' gradient G = c_i (exp(x - lse_i) - s / V) - c_i (1 - s)
//             at the label, c_i = dloss keep_i / count (cross_entropy's rule);
//             then dh_r = G w, and dw = G^T h_r (added to the blocks before);
//   train:    the forward's row loop keeps exp(x - max) in place as it sums it
//             and makes each row's gradient from it right after its loss, then
//             the backward's two products: the logits made once.
// The backward alone recomputes the logits (the forward's GEMM again): a third
// more GEMM work on the output projection for no [N, V] buffer, as Cut
// Cross-Entropy and FlashAttention trade it; a training step's pair becomes the
// train op (passes/linear_cross_entropy.cpp), which does not. The block's first
// row, the scratch pointers and c reach the GEMMs' tasks as ambient values
// (lowering_context.h).
#include <algorithm>
#include <utility>

#include "compiler/codegen/families.h"
#include "compiler/codegen/fast_math.h"
#include "compiler/codegen/gemm.h"
#include "compiler/codegen/row_cross_entropy.h"
#include "compiler/runtime/kiln_runtime.h"

namespace kiln::compiler {
namespace {

// The scratch a block's logits may take: large enough that dw's product adds up
// R >= 512 rows of G at a time for vocabularies up to 16k (its C, V x D, is read
// and written once per block), small against the [N, V] logits it replaces.
constexpr int64_t kScratchBytes = int64_t{32} << 20;
// At least this many rows a block, however large V: each block reads w twice
// (the logits' and dh's products) and reads and writes dw, V x D each, so
// fewer rows leave those products bound by memory (V = 128k, D = 256 with
// blocks of 64 rows ran 1.35x slower than the unfused loss).
constexpr int64_t kMinBlockRows = 256;

// Rows per block: as many as kScratchBytes holds (at least kMinBlockRows), and
// where N is larger, a divisor of N in the upper half of that if there is one
// (no tail block, whose GEMMs would be compiled a second time).
int64_t rows_per_block(int64_t n, int64_t v) {
  const int64_t most = std::max(kMinBlockRows, kScratchBytes / (4 * v));
  if (n <= most) return n;
  for (int64_t r = most; r > most / 2; --r)
    if (n % r == 0) return r;
  return most;
}

struct LinearLoss {
  const KernelEmitArgs& a;
  LoweringContext& cx;
  int64_t n, d, v, rows;
  double smoothing;
  int64_t ignore_index;

  explicit LinearLoss(const KernelEmitArgs& args)
      : a(args),
        cx(args.cx),
        n(args.node.in(0).shape[0]),
        d(args.node.in(0).shape[1]),
        v(args.node.in(1).shape[0]),
        rows(rows_per_block(n, v)),
        smoothing(args.node.attrs().get_float("smoothing")),
        ignore_index(args.node.attrs().get_int("ignore_index")) {}

  llvm::Value* f32_at(llvm::Value* base, llvm::Value* index) const {
    return cx.b().CreateInBoundsGEP(cx.b().getFloatTy(), base, index);
  }
  llvm::Value* label_of(llvm::Value* row) const {
    return cx.b().CreateSExt(cx.load(DType::i32, a.operand_ptr(2), row, 1), cx.i64());
  }
  llvm::Value* kept(llvm::Value* label) const { return cx.b().CreateICmpNE(label, cx.i64c(ignore_index)); }
  // Row `row`'s label and whether it counts; a label outside [0, V) that is not
  // ignore_index is a run-time error (KILN_ERROR_INDEX_OUT_OF_RANGE), as in the reference.
  std::pair<llvm::Value*, llvm::Value*> checked_label(llvm::Value* row) const {
    llvm::Value* label = label_of(row);
    llvm::Value* keep = kept(label);
    cx.report_error_if(cx.b().CreateAnd(keep, cx.b().CreateICmpUGE(label, cx.i64c(v))), KILN_ERROR_INDEX_OUT_OF_RANGE);
    return {label, keep};
  }
  llvm::Value* null_ptr() const { return llvm::ConstantPointerNull::get(llvm::PointerType::get(cx.context(), 0)); }

  // Ambient values of the blocks: the block's first row, its logits, the rows'
  // losses (doubles; forward and train) and the gradient's c = dloss / count
  // (backward and train).
  llvm::Value* r0() const { return cx.ambient(0); }
  llvm::Value* logits() const { return cx.ambient(1); }
  llvm::Value* losses() const { return cx.ambient(2); }
  llvm::Value* coef() const { return cx.ambient(3); }

  // Calls block(count) for the blocks of `rows` rows (count a constant), each
  // with its first row (an i64) as ambient value 0 and `ambient` after it.
  void for_blocks(const std::vector<llvm::Value*>& ambient, const std::function<void(int64_t count)>& block) const {
    const auto with = [&](llvm::Value* r0, int64_t count) {
      std::vector<llvm::Value*> values = {r0};
      values.insert(values.end(), ambient.begin(), ambient.end());
      cx.with_ambient(values, [&] { block(count); });
    };
    const int64_t whole = n / rows * rows;
    cx.for_range(0, whole, rows, [&](llvm::Value* r0) { with(r0, rows); });
    if (whole < n) with(cx.i64c(whole), n - whole);
  }

  // X = h[r0 : r0 + count] w^T into the block's logits, with `epilogue`.
  void emit_logits(int64_t count, const std::string& name,
                   std::function<void(llvm::Value*, llvm::Value*, llvm::Value*, llvm::Value*, llvm::Value*)> epilogue)
      const {
    GemmProblem p;
    p.m = count;
    p.n = v;
    p.k = d;
    p.tb = true;
    p.a_matrix = [&](llvm::Value*) { return f32_at(a.operand_ptr(0), cx.b().CreateMul(r0(), cx.i64c(d))); };
    p.b_matrix = [&](llvm::Value*) { return a.operand_ptr(1); };
    p.c_matrix = [&](llvm::Value*) { return logits(); };
    p.epilogue = std::move(epilogue);
    emit_gemm(cx, cx.unique_name(name), p);
  }

  // linear_cross_entropy: loss, lse.
  void emit_forward() {
    if (n == 0) return cx.store(DType::f32, a.result_ptr(0), cx.i64c(0), cx.f32c(0));
    with_scratch(true, [&](llvm::Value* scratch, llvm::Value* losses) {
      for_blocks({scratch, losses, cx.f32c(0)}, [&](int64_t count) {
        emit_logits(count, "lce.logits", {});
        emit_rows(count, true, false);
      });
      emit_mean(losses);
    });
  }

  // linear_cross_entropy_backward: dh, dw from lse (operand 3) and dloss (operand 4).
  void emit_backward() {
    if (n == 0) return zero_dw(1);
    llvm::Value* c = gradient_coef(a.operand_ptr(4));
    with_scratch(false, [&](llvm::Value* scratch, llvm::Value*) {
      for_blocks({scratch, null_ptr(), c},
                 [&](int64_t count) {
                   emit_logits(count, "lce.grad_logits",
                               [&](llvm::Value*, llvm::Value* m0, llvm::Value* rows_in, llvm::Value* n0,
                                   llvm::Value* cols) {
                                 cx.for_range(m0, cx.b().CreateAdd(m0, rows_in), 1, [&](llvm::Value* i) {
                                   llvm::Value* lse = cx.load(DType::f32, a.operand_ptr(3), cx.b().CreateAdd(r0(), i), 1);
                                   emit_gradient_line(i, n0, cols, [&](llvm::Value* x, int width) {
                                     return emit_exp(cx, cx.b().CreateFSub(x, cx.splat(lse, width)));
                                   });
                                 });
                               });
                   emit_products(count, 0);
                 });
    });
  }

  // linear_cross_entropy_train: loss, dh, dw from dloss (operand 3), the logits made once.
  void emit_train() {
    if (n == 0) {
      cx.store(DType::f32, a.result_ptr(0), cx.i64c(0), cx.f32c(0));
      return zero_dw(2);
    }
    llvm::Value* c = gradient_coef(a.operand_ptr(3));
    with_scratch(true, [&](llvm::Value* scratch, llvm::Value* losses) {
      for_blocks({scratch, losses, c}, [&](int64_t count) {
        emit_logits(count, "lce.logits", {});
        emit_rows(count, false, true);
        emit_products(count, 1);
      });
      emit_mean(losses);
    });
  }

  // No rows: dw (result `i`) is 0.
  void zero_dw(size_t i) const {
    cx.b().CreateMemSet(a.result_ptr(i), cx.b().getInt8(0), static_cast<uint64_t>(v * d) * 4, llvm::Align(4));
  }

  // c = dloss / max(kept rows, 1); a bad label is the forward's error too.
  llvm::Value* gradient_coef(llvm::Value* dloss_ptr) const {
    auto& b = cx.b();
    llvm::Value* zero = llvm::ConstantFP::get(b.getFloatTy(), 0.0);
    llvm::Value* count = cx.for_range(0, n, 1, {zero}, [&](llvm::Value* row, const LoweringContext::Carried& acc) {
      llvm::Value* keep = checked_label(row).second;
      return LoweringContext::Carried{b.CreateFAdd(acc[0], b.CreateUIToFP(keep, b.getFloatTy()))};
    })[0];
    llvm::Value* dloss = cx.load(DType::f32, dloss_ptr, cx.i64c(0), 1);
    return b.CreateFDiv(dloss, b.CreateMaxNum(count, cx.f32c(1)), "coef");
  }

  // Runs body(scratch, losses) with a block's logits of scratch and, with
  // `losses`, the rows' losses after them (else a null pointer); or reports
  // KILN_ERROR_OUT_OF_MEMORY.
  void with_scratch(bool with_losses, const std::function<void(llvm::Value*, llvm::Value*)>& body) const {
    auto& b = cx.b();
    const int64_t logits_bytes = rows * v * 4;
    llvm::FunctionCallee scratch_fn = cx.module().getOrInsertFunction("kiln_scratch", cx.ptr(), cx.i64());
    llvm::Value* scratch = b.CreateCall(scratch_fn, {cx.i64c(logits_bytes + (with_losses ? n * 8 : 0))}, "scratch");
    llvm::Value* null = null_ptr();
    cx.if_else(
        b.CreateICmpEQ(scratch, null), [&] { cx.report_error_if(b.getTrue(), KILN_ERROR_OUT_OF_MEMORY); },
        [&] { body(scratch, with_losses ? b.CreateInBoundsGEP(b.getInt8Ty(), scratch, cx.i64c(logits_bytes)) : null); },
        "lce.scratch");
  }

  // Each row of the block, in parallel: its loss (to losses), its lse (with
  // `store_lse`, to result 1) and, with `gradient`, its logits made their gradient.
  void emit_rows(int64_t count, bool store_lse, bool gradient) const {
    cx.parallel_for(cx.unique_name("lce.rows"), count, LoweringContext::grain_for(4 * v),
                    [&](llvm::Value* begin, llvm::Value* end) {
                      cx.for_range(begin, end, 1, [&](llvm::Value* i) {
                        const RowCrossEntropy r = emit_row(i, store_lse ? a.result_ptr(1) : nullptr, gradient);
                        if (!gradient) return;
                        // The row holds exp(x - max): its softmax is that over the sum.
                        llvm::Value* inverse = cx.b().CreateFDiv(cx.f32c(1), r.sum_exp);
                        emit_gradient_line(i, cx.i64c(0), cx.i64c(v), [&](llvm::Value* e, int width) {
                          return cx.b().CreateFMul(e, cx.splat(inverse, width));
                        });
                      });
                    });
  }

  // Row i of the block: its loss to losses (0 where not kept) and its lse (to
  // lse_out if set); with `keep_exp`, the row's logits become exp(x - max).
  RowCrossEntropy emit_row(llvm::Value* i, llvm::Value* lse_out, bool keep_exp) const {
    auto& b = cx.b();
    llvm::Value* row = b.CreateAdd(r0(), i);
    llvm::Value* line = f32_at(logits(), b.CreateMul(i, cx.i64c(v)));
    const auto [label, keep] = checked_label(row);
    ExpOut exp_out;
    if (keep_exp) exp_out = [&](llvm::Value* k, llvm::Value* e) { cx.store(DType::f32, line, k, e); };
    const RowCrossEntropy r = row_cross_entropy(
        cx, v, smoothing, [&](llvm::Value* k, int w) { return cx.load(DType::f32, line, k, w); }, label, exp_out);
    if (lse_out) cx.store(DType::f32, lse_out, row, r.lse);
    llvm::Value* loss = b.CreateSelect(keep, r.loss, llvm::ConstantFP::get(b.getDoubleTy(), 0.0));
    b.CreateStore(loss, b.CreateInBoundsGEP(b.getDoubleTy(), losses(), row));
    return r;
  }

  // The mean of the kept rows' losses, added in row order (so for any thread count alike).
  void emit_mean(llvm::Value* losses_ptr) const {
    auto& b = cx.b();
    llvm::Value* zero = llvm::ConstantFP::get(b.getDoubleTy(), 0.0);
    const LoweringContext::Carried sums =
        cx.for_range(0, n, 1, {zero, zero}, [&](llvm::Value* row, const LoweringContext::Carried& acc) {
          llvm::Value* loss = b.CreateLoad(b.getDoubleTy(), b.CreateInBoundsGEP(b.getDoubleTy(), losses_ptr, row));
          llvm::Value* one = b.CreateUIToFP(kept(label_of(row)), b.getDoubleTy());
          return LoweringContext::Carried{b.CreateFAdd(acc[0], loss), b.CreateFAdd(acc[1], one)};
        });
    llvm::Value* mean = b.CreateSelect(b.CreateFCmpOGT(sums[1], zero), b.CreateFDiv(sums[0], sums[1]), zero);
    cx.store(DType::f32, a.result_ptr(0), cx.i64c(0), b.CreateFPTrunc(mean, b.getFloatTy()));
  }

  // dh[r0 : r0 + count] = G w and dw (+)= G^T h[r0 : r0 + count], G the block's
  // logits made gradient; dh and dw are results first and first + 1.
  void emit_products(int64_t count, size_t first) const {
    GemmProblem dh;
    dh.m = count;
    dh.n = d;
    dh.k = v;
    dh.a_matrix = [&](llvm::Value*) { return logits(); };
    dh.b_matrix = [&](llvm::Value*) { return a.operand_ptr(1); };
    dh.c_matrix = [&](llvm::Value*) { return f32_at(a.result_ptr(first), cx.b().CreateMul(r0(), cx.i64c(d))); };
    emit_gemm(cx, cx.unique_name("lce.dh"), dh);
    GemmProblem dw;
    dw.m = v;
    dw.n = d;
    dw.k = count;
    dw.ta = true;
    dw.a_matrix = [&](llvm::Value*) { return logits(); };
    dw.b_matrix = [&](llvm::Value*) { return f32_at(a.operand_ptr(0), cx.b().CreateMul(r0(), cx.i64c(d))); };
    dw.c_matrix = [&](llvm::Value*) { return a.result_ptr(first + 1); };
    dw.accumulate = [&] { return cx.b().CreateICmpSGT(r0(), cx.i64c(0)); };
    emit_gemm(cx, cx.unique_name("lce.dw"), dw);
  }

  // Columns n0 .. n0 + cols (i64) of row i of the block become their gradient
  // c_i (p - s / V) - c_i (1 - s) [label], c_i = c where the row is kept, else
  // 0, with p = softmax(x, the value there, width): W columns at a time, then one
  // at a time.
  void emit_gradient_line(llvm::Value* i, llvm::Value* n0, llvm::Value* cols,
                          const std::function<llvm::Value*(llvm::Value*, int)>& softmax) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    const float uniform = static_cast<float>(smoothing / static_cast<double>(v));
    llvm::Value* vector_end = b.CreateSub(cols, b.CreateURem(cols, cx.i64c(w)));
    llvm::Value* label = label_of(b.CreateAdd(r0(), i));
    llvm::Value* c = b.CreateSelect(kept(label), coef(), cx.f32c(0));
    llvm::Value* line = f32_at(logits(), b.CreateAdd(b.CreateMul(i, cx.i64c(v)), n0));
    const auto step = [&](llvm::Value* j, int width) {
      llvm::Value* p = softmax(cx.load(DType::f32, line, j, width), width);
      cx.store(DType::f32, line, j, b.CreateFMul(cx.splat(c, width), b.CreateFSub(p, cx.f32c(uniform, width))));
    };
    cx.for_range(cx.i64c(0), vector_end, w, [&](llvm::Value* j) { step(j, w); });
    cx.for_range(vector_end, cols, 1, [&](llvm::Value* j) { step(j, 1); });
    llvm::Value* at = b.CreateSub(label, n0);  // the label's column, if in these
    cx.if_else(
        b.CreateICmpULT(at, cols),
        [&] {
          llvm::Value* target = b.CreateFMul(c, cx.f32c(static_cast<float>(1.0 - smoothing)));
          cx.store(DType::f32, line, at, b.CreateFSub(cx.load(DType::f32, line, at, 1), target));
        },
        {}, "lce.label");
  }
};

}  // namespace

void register_linear_loss_emitters(EmitterRegistry& r) {
  r.add_kernel("linear_cross_entropy", [](const KernelEmitArgs& a) { LinearLoss(a).emit_forward(); },
               KernelReads::memory);
  r.add_kernel("linear_cross_entropy_backward", [](const KernelEmitArgs& a) { LinearLoss(a).emit_backward(); },
               KernelReads::memory);
  r.add_kernel("linear_cross_entropy_train", [](const KernelEmitArgs& a) { LinearLoss(a).emit_train(); },
               KernelReads::memory);
}

}  // namespace kiln::compiler
