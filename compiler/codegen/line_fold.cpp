#include "compiler/codegen/line_fold.h"

#include <limits>

#include "compiler/codegen/blocked_sum.h"

namespace kiln::compiler::line_fold {

namespace {

std::vector<bool> sums_of(const Folds& folds) {
  std::vector<bool> sums;
  for (Fold fold : folds) sums.push_back(fold == Fold::sum);
  return sums;
}

// Folds positions [begin, end) into accumulators of `width` lanes: sums as f64
// totals (blocked_sum.h), maxima as f32.
Carried fold_totals(LoweringContext& cx, int64_t begin, int64_t end, int64_t step_size, int width, const Folds& folds,
                    const Step& step) {
  Carried init;
  for (Fold fold : folds)
    init.push_back(fold == Fold::sum ? zero_total(cx, width)
                                     : cx.f32c(-std::numeric_limits<float>::infinity(), width));
  return for_blocks(cx, begin, end, step_size, init, sums_of(folds),
                    [&](llvm::Value* k, const Carried& acc) { return step(k, width, acc); });
}

}  // namespace

llvm::Value* combine(LoweringContext& cx, Fold fold, llvm::Value* acc, llvm::Value* x) {
  auto& b = cx.b();
  if (fold == Fold::sum) return b.CreateFAdd(acc, x);
  return b.CreateMaximum(acc, x);  // max as the reduction emitters do it: nan if either is
}

Carried fold_range(LoweringContext& cx, int64_t begin, int64_t end, int64_t step_size, int width, const Folds& folds,
                   const Step& step) {
  Carried totals = fold_totals(cx, begin, end, step_size, width, folds, step);
  for (size_t i = 0; i < folds.size(); ++i)
    if (folds[i] == Fold::sum) totals[i] = cx.b().CreateFPTrunc(totals[i], cx.reg_type(DType::f32, width));
  return totals;
}

Carried fold_line(LoweringContext& cx, int64_t n, const Folds& folds, const Step& step) {
  auto& b = cx.b();
  const int width = cx.vector_width();
  const int64_t vector_end = n - n % width;
  const Carried vec = fold_totals(cx, 0, vector_end, width, width, folds, step);
  const Carried scalar = fold_totals(cx, vector_end, n, 1, 1, folds, step);
  Carried line;
  for (size_t i = 0; i < folds.size(); ++i) {
    if (folds[i] == Fold::max) {
      line.push_back(vector_end == 0 ? scalar[i] : combine(cx, Fold::max, scalar[i], b.CreateFPMaximumReduce(vec[i])));
      continue;
    }
    llvm::Value* total = vector_end == 0 ? scalar[i] : add_lanes(cx, vec[i]);
    if (vector_end > 0 && vector_end < n) total = b.CreateFAdd(total, scalar[i]);
    line.push_back(b.CreateFPTrunc(total, b.getFloatTy()));
  }
  return line;
}

}  // namespace kiln::compiler::line_fold
