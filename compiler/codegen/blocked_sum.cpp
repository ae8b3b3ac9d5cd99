#include "compiler/codegen/blocked_sum.h"

#include <algorithm>
#include <llvm/IR/Intrinsics.h>

namespace kiln::compiler {

namespace {

using Carried = LoweringContext::Carried;

// f32 of the lane count of `total` (f64 or <W x double>).
llvm::Type* f32_like(LoweringContext& cx, llvm::Value* total) {
  if (auto* vec = llvm::dyn_cast<llvm::FixedVectorType>(total->getType()))
    return llvm::FixedVectorType::get(cx.b().getFloatTy(), vec->getNumElements());
  return cx.b().getFloatTy();
}

}  // namespace

llvm::Value* zero_total(LoweringContext& cx, int width) {
  return cx.splat(llvm::ConstantFP::get(cx.b().getDoubleTy(), 0.0), width);
}

llvm::Value* add_lanes(LoweringContext& cx, llvm::Value* vec) {
  llvm::Type* element = llvm::cast<llvm::VectorType>(vec->getType())->getElementType();
  auto* sum = cx.b().CreateFAddReduce(llvm::ConstantFP::get(element, -0.0), vec);
  sum->setHasAllowReassoc(true);  // a tree of adds, not a sequential chain
  return sum;
}

Carried for_blocks(LoweringContext& cx, int64_t begin, int64_t end, int64_t step, const Carried& init,
                   const std::vector<bool>& sums, const std::function<Carried(llvm::Value*, const Carried&)>& body) {
  if (std::none_of(sums.begin(), sums.end(), [](bool sum) { return sum; }))
    return cx.for_range(begin, end, step, init, body);
  auto& b = cx.b();
  // A block's accumulators: the sums restarted at 0 in f32, the others carried on.
  const auto restart = [&](Carried totals) {
    for (size_t i = 0; i < sums.size(); ++i)
      if (sums[i]) totals[i] = llvm::ConstantFP::get(f32_like(cx, totals[i]), 0.0);
    return totals;
  };
  // After a block: its sums added into the totals.
  const auto add_block = [&](const Carried& totals, Carried after) {
    for (size_t i = 0; i < sums.size(); ++i)
      if (sums[i]) after[i] = b.CreateFAdd(totals[i], b.CreateFPExt(after[i], totals[i]->getType()), "sum.total");
    return after;
  };
  const int64_t span = kSumBlock * step;
  if (end - begin <= span) return add_block(init, cx.for_range(begin, end, step, restart(init), body));
  return cx.for_range(begin, end, span, init, [&](llvm::Value* first, const Carried& totals) {
    llvm::Value* last = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(first, cx.i64c(span)), cx.i64c(end));
    return add_block(totals, cx.for_range(first, last, step, restart(totals), body));
  });
}

}  // namespace kiln::compiler
