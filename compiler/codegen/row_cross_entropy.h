#pragma once
// One row's softmax cross-entropy, shared by the cross_entropy and
// linear_cross_entropy emitters: two vectorized passes over the row's logits
// (the max; then the sums of exp(x - max) and of x - max, and x - max at the
// label), the sums blocked (blocked_sum.h).
#include <cstdint>
#include <functional>

#include "compiler/codegen/lowering_context.h"

namespace kiln::compiler {

struct RowCrossEntropy {
  llvm::Value* loss;     // double: -(1 - s) logp[label] - s / V sum logp
  llvm::Value* lse;      // f32: max + log(sum exp(x - max))
  llvm::Value* sum_exp;  // f32: sum exp(x - max)
};

// The row of `classes` logits that logit(k, width) reads (f32, `width` lanes from
// position k, an i64) against `label` (i64; one outside [0, classes) picks no
// logit). `exp_out`, if set, is handed each exp(x - max) the second pass makes
// (so that a gradient need not make it again: softmax = exp(x - max) / sum_exp).
using ExpOut = std::function<void(llvm::Value* k, llvm::Value* exp)>;
RowCrossEntropy row_cross_entropy(LoweringContext& cx, int64_t classes, double smoothing,
                                  const std::function<llvm::Value*(llvm::Value* k, int width)>& logit,
                                  llvm::Value* label, const ExpOut& exp_out = {});

}  // namespace kiln::compiler
