#include "compiler/codegen/line_fold.h"

#include <limits>

namespace kiln::compiler::line_fold {

llvm::Value* identity(LoweringContext& cx, Fold fold, int width) {
  return cx.f32c(fold == Fold::max ? -std::numeric_limits<float>::infinity() : 0.0f, width);
}

llvm::Value* combine(LoweringContext& cx, Fold fold, llvm::Value* acc, llvm::Value* x) {
  auto& b = cx.b();
  if (fold == Fold::sum) return b.CreateFAdd(acc, x);
  return b.CreateMaximum(acc, x);  // max as the reduction emitters do it: nan if either is
}

// The lanes of a vector accumulator combined into one value.
llvm::Value* fold_lanes(LoweringContext& cx, Fold fold, llvm::Value* vec) {
  if (fold == Fold::max) return cx.b().CreateFPMaximumReduce(vec);
  auto* sum = cx.b().CreateFAddReduce(cx.f32c(-0.0f), vec);
  sum->setHasAllowReassoc(true);  // a tree of adds, not a sequential chain
  return sum;
}

// Folds positions [begin, end), `step_size` apart, with `width` lanes each, into
// accumulators of that width.
Carried fold_range(LoweringContext& cx, int64_t begin, int64_t end, int64_t step_size, int width, const Folds& folds,
                   const Step& step) {
  Carried init;
  for (Fold fold : folds) init.push_back(identity(cx, fold, width));
  return cx.for_range(begin, end, step_size, init,
                      [&](llvm::Value* k, const Carried& acc) { return step(k, width, acc); });
}

// A contiguous line [0, n): W-lane vectors, then single elements; returns the
// folded scalars.
Carried fold_line(LoweringContext& cx, int64_t n, const Folds& folds, const Step& step) {
  const int width = cx.vector_width();
  const int64_t vector_end = n - n % width;
  const Carried vec = fold_range(cx, 0, vector_end, width, width, folds, step);
  Carried scalar = fold_range(cx, vector_end, n, 1, 1, folds, step);
  if (vector_end == 0) return scalar;
  for (size_t i = 0; i < folds.size(); ++i)
    scalar[i] = combine(cx, folds[i], scalar[i], fold_lanes(cx, folds[i], vec[i]));
  return scalar;
}

}  // namespace kiln::compiler::line_fold
