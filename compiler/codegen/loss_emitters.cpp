// cross_entropy(logits f32[..., V], labels i32[...]) {smoothing, ignore_index}
// (ops/loss.cpp): a kernel emitter.
//
// Each position (row of V logits) whose label is not ignore_index takes two
// vectorized passes over its logits:
//   pass 1: the max m;
//   pass 2: with s = x - m: the sum of exp(s), the sum of s, and s at the label
//           (picked by comparing lane positions with the label, so a bad label
//           never becomes an address).
// Then lse = log(sum exp(s)), logp[label] = s[label] - lse, sum logp = sum s - V lse,
// and the row's loss -(1 - smoothing) logp[label] - smoothing / V * sum logp, in
// double like the reference (which also means 0 * -inf = nan for a row holding a
// -inf logit when smoothing is 0, as the reference computes it). Both passes read
// each logit through the same generator at the same width, so a fused producer
// gives the max and the shift bit-identical values.
//
// A label outside [0, V) that is not ignore_index is a run-time error
// (KILN_ERROR_INDEX_OUT_OF_RANGE in the status word), like the reference's throw.
//
// The result is the mean over kept rows (0 if none). Rows are grouped into
// chunks fixed by the shape, not by the thread count; each chunk's loss sum and
// row count go to its own slot in a stack array, and the kernel adds the slots in
// order afterwards, so the result is bit-identical for any number of threads.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <limits>

#include "compiler/codegen/families.h"
#include "compiler/codegen/line_fold.h"
#include "compiler/codegen/fast_math.h"
#include "compiler/codegen/row_cross_entropy.h"
#include "compiler/runtime/kiln_runtime.h"

namespace kiln::compiler {

namespace {

// At most this many chunks, so the partial sums (two doubles each) fit easily on the stack.
constexpr int64_t kMaxChunks = 1024;
constexpr int kSlotsPerChunk = 2;  // loss sum, kept rows

// Runs body(partials, begin, end) over chunks [0, chunks) on the runtime's thread
// pool; `partials` is a double[chunks * kSlotsPerChunk] array in the calling
// kernel's frame (passed to the tasks as an ambient value), which the caller
// reads after this returns.
llvm::Value* parallel_chunks(LoweringContext& cx, const std::string& name, int64_t chunks,
                             const std::function<void(llvm::Value*, llvm::Value*, llvm::Value*)>& body) {
  auto& b = cx.b();
  llvm::Function* kernel = b.GetInsertBlock()->getParent();
  llvm::IRBuilder<> entry(&kernel->getEntryBlock(), kernel->getEntryBlock().begin());
  llvm::Value* partials = entry.CreateAlloca(b.getDoubleTy(), cx.i64c(chunks * kSlotsPerChunk), "partials");
  cx.with_ambient({partials}, [&] {
    cx.parallel_for(name, chunks, 1, [&](llvm::Value* begin, llvm::Value* end) { body(cx.ambient(0), begin, end); });
  });
  return partials;
}

using line_fold::Carried;
using line_fold::Fold;
using line_fold::combine;
using line_fold::fold_line;

}  // namespace

RowCrossEntropy row_cross_entropy(LoweringContext& cx, int64_t classes, double smoothing,
                                  const std::function<llvm::Value*(llvm::Value* k, int width)>& logit,
                                  llvm::Value* label, const ExpOut& exp_out) {
  auto& b = cx.b();
  llvm::Value* max = fold_line(cx, classes, {Fold::max}, [&](llvm::Value* k, int w, const Carried& acc) {
    return Carried{combine(cx, Fold::max, acc[0], logit(k, w))};
  })[0];
  // {sum of exp(s), sum of s, s at the label}
  const Carried total =
      fold_line(cx, classes, {Fold::sum, Fold::sum, Fold::sum}, [&](llvm::Value* k, int w, const Carried& acc) {
        llvm::Value* shifted = b.CreateFSub(logit(k, w), cx.splat(max, w));
        llvm::Value* position = cx.splat(k, w);
        if (w > 1) {
          std::vector<llvm::Constant*> lanes;
          for (int lane = 0; lane < w; ++lane) lanes.push_back(b.getInt64(static_cast<uint64_t>(lane)));
          position = b.CreateAdd(position, llvm::ConstantVector::get(lanes));
        }
        llvm::Value* is_label = b.CreateICmpEQ(position, cx.splat(label, w));
        llvm::Value* zero = cx.f32c(0, w);
        llvm::Value* e = emit_exp(cx, shifted);
        if (exp_out) exp_out(k, e);
        return Carried{b.CreateFAdd(acc[0], e), b.CreateFAdd(acc[1], shifted),
                       b.CreateFAdd(acc[2], b.CreateSelect(is_label, shifted, zero))};
      });
  llvm::Value* log_sum_exp = emit_log(cx, total[0]);
  llvm::Value* logp_label = b.CreateFPExt(b.CreateFSub(total[2], log_sum_exp), b.getDoubleTy());
  const auto as_double = [&](double v) { return llvm::ConstantFP::get(b.getDoubleTy(), v); };
  llvm::Value* logp_sum = b.CreateFSub(
      b.CreateFPExt(total[1], b.getDoubleTy()),
      b.CreateFMul(as_double(static_cast<double>(classes)), b.CreateFPExt(log_sum_exp, b.getDoubleTy())));
  return {b.CreateFSub(b.CreateFMul(as_double(-(1.0 - smoothing)), logp_label),
                       b.CreateFMul(as_double(smoothing / static_cast<double>(classes)), logp_sum)),
          b.CreateFAdd(max, log_sum_exp), total[0]};
}

namespace {

struct CrossEntropy {
  const KernelEmitArgs& a;
  Shape positions;  // the labels' shape
  int64_t classes;
  double smoothing;
  int64_t ignore_index;

  explicit CrossEntropy(const KernelEmitArgs& args)
      : a(args),
        positions(args.node.in(1).shape),
        classes(args.node.in(0).shape.back()),
        smoothing(args.node.attrs().get_float("smoothing")),
        ignore_index(args.node.attrs().get_int("ignore_index")) {}

  // The loss of row `dims` (a position) with label `label` (i64), as a double.
  llvm::Value* row_loss(const std::vector<llvm::Value*>& dims, llvm::Value* label) const {
    const int lane_axis = static_cast<int>(dims.size());
    const auto logit = [&](llvm::Value* k, int w) {
      std::vector<llvm::Value*> at = dims;
      at.push_back(k);
      return a.operands[0](ElementIndex{at, w, w > 1 ? lane_axis : -1});
    };
    return row_cross_entropy(a.cx, classes, smoothing, logit, label).loss;
  }

  // Adds row `row`'s loss and 1 to {loss, kept} unless its label is ignore_index.
  Carried add_row(llvm::Value* row, const Carried& acc) const {
    LoweringContext& cx = a.cx;
    auto& b = cx.b();
    const std::vector<llvm::Value*> dims = unflatten(cx, row, positions);
    llvm::Value* label = b.CreateSExt(a.operands[1](ElementIndex{dims, 1, -1}), cx.i64());
    llvm::Value* keep = b.CreateICmpNE(label, cx.i64c(ignore_index));
    cx.report_error_if(b.CreateAnd(keep, b.CreateICmpUGE(label, cx.i64c(classes))), KILN_ERROR_INDEX_OUT_OF_RANGE);

    return cx.only_if(keep, acc, [&] {
      return Carried{b.CreateFAdd(acc[0], row_loss(dims, label)),
                     b.CreateFAdd(acc[1], llvm::ConstantFP::get(b.getDoubleTy(), 1.0))};
    }, "ce.kept");
  }

  void emit() const {
    LoweringContext& cx = a.cx;
    auto& b = cx.b();
    const int64_t rows = numel(positions);
    llvm::Value* zero = llvm::ConstantFP::get(b.getDoubleTy(), 0.0);
    if (rows == 0) {
      cx.store(DType::f32, a.result_ptr(), cx.i64c(0), cx.f32c(0));
      return;
    }
    const int64_t per_chunk =
        std::max(LoweringContext::grain_for(classes), (rows + kMaxChunks - 1) / kMaxChunks);  // rows
    const int64_t chunks = (rows + per_chunk - 1) / per_chunk;
    const auto slot = [&](llvm::Value* partials, llvm::Value* chunk, int i) {
      llvm::Value* index = b.CreateAdd(b.CreateMul(chunk, cx.i64c(kSlotsPerChunk)), cx.i64c(i));
      return b.CreateInBoundsGEP(b.getDoubleTy(), partials, index);
    };
    llvm::Value* partials = parallel_chunks(
        cx, cx.unique_name("cross_entropy.rows"), chunks,
        [&](llvm::Value* parts, llvm::Value* begin, llvm::Value* end) {
          cx.for_range(begin, end, 1, [&](llvm::Value* chunk) {
            llvm::Value* first = b.CreateMul(chunk, cx.i64c(per_chunk));
            llvm::Value* last =
                b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(first, cx.i64c(per_chunk)), cx.i64c(rows));
            const Carried acc = cx.for_range(first, last, 1, {zero, zero},
                                             [&](llvm::Value* row, const Carried& c) { return add_row(row, c); });
            for (int i = 0; i < kSlotsPerChunk; ++i) b.CreateStore(acc[static_cast<size_t>(i)], slot(parts, chunk, i));
          });
        });
    const Carried sums = cx.for_range(0, chunks, 1, {zero, zero}, [&](llvm::Value* chunk, const Carried& c) {
      return Carried{b.CreateFAdd(c[0], b.CreateLoad(b.getDoubleTy(), slot(partials, chunk, 0))),
                     b.CreateFAdd(c[1], b.CreateLoad(b.getDoubleTy(), slot(partials, chunk, 1)))};
    });
    llvm::Value* mean = b.CreateSelect(b.CreateFCmpOGT(sums[1], zero), b.CreateFDiv(sums[0], sums[1]), zero);
    cx.store(DType::f32, a.result_ptr(), cx.i64c(0), b.CreateFPTrunc(mean, b.getFloatTy()));
  }
};

}  // namespace

void register_loss_emitters(EmitterRegistry& r) {
  r.add_kernel("cross_entropy", [](const KernelEmitArgs& a) { CrossEntropy(a).emit(); }, KernelReads::generators);
}

}  // namespace kiln::compiler
