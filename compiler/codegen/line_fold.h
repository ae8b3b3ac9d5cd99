#pragma once
// Folding a line of f32 elements into sum/max accumulators, vectorized: the
// shared pass structure of the normalization, loss and row-fusion kernel
// emitters. Sums are blocked (blocked_sum.h): accurate to its bound however
// long the line.
#include <functional>
#include <vector>

#include "compiler/codegen/lowering_context.h"

namespace kiln::compiler::line_fold {

using Carried = LoweringContext::Carried;

enum class Fold { sum, max };
using Folds = std::vector<Fold>;  // one per accumulator of a pass; none: a pass that only writes

// acc (+) x; max as the reduction emitters do it.
llvm::Value* combine(LoweringContext& cx, Fold fold, llvm::Value* acc, llvm::Value* x);

// step(k, width, acc): handles `width` elements from line position k and returns
// the next accumulators (f32, of `width` lanes).
using Step = std::function<Carried(llvm::Value* k, int width, const Carried& acc)>;

// Folds positions [begin, end), `step_size` apart, with `width` lanes each, into
// accumulators of that width.
Carried fold_range(LoweringContext& cx, int64_t begin, int64_t end, int64_t step_size, int width, const Folds& folds,
                   const Step& step);
// A contiguous line [0, n): W-lane vectors, then single elements; returns the
// folded scalars.
Carried fold_line(LoweringContext& cx, int64_t n, const Folds& folds, const Step& step);

}  // namespace kiln::compiler::line_fold
