// sum, mean and max over any axes {keepdims}: kernel emitters, and the model for
// other kernel families (normalizations, losses). Operands are read through
// generators, so a later fusion can feed producers in without memory.
//
// Two loop structures, both vectorized with the target's width:
//  * the innermost axis is reduced (row reductions): one task per result element
//    accumulates W-lane vectors along the row plus a scalar remainder, then
//    reduces the lanes;
//  * the innermost axis is kept (column reductions): vectors of results, each
//    accumulated over the reduced axes in four interleaved chains, split across
//    threads by result vector, so no horizontal step is needed.
// f32 sums are blocked (blocked_sum.h): f32 lanes and chains over at most
// kSumBlock terms each, added into f64 totals that are rounded once, so a sum
// of 2^32 terms is as accurate as one of 2^10 (the reference sums in double);
// i32 sums wrap; mean divides the f64 sum by the element count.
#include <llvm/IR/Intrinsics.h>
#include <limits>

#include "compiler/codegen/blocked_sum.h"
#include "compiler/codegen/families.h"
#include "ops/op_helpers.h"

namespace kiln::compiler {

namespace {

enum class Kind { sum, mean, max };

struct Reduction {
  Kind kind;
  DType dtype;
  const Shape& in;
  std::vector<bool> reduced;  // per operand axis
  Shape kept, reduced_dims;   // result shape without keepdims' 1s; sizes of the reduced axes
  int64_t count = 1;          // elements per result

  Reduction(Kind k, const NodeRef& node) : kind(k), dtype(node.in(0).dtype), in(node.in(0).shape) {
    reduced.assign(in.size(), false);
    for (int64_t axis : ops::normalize_axes(node.attrs().get_ints("axes"), node.in(0).rank(), true))
      reduced[static_cast<size_t>(axis)] = true;
    for (size_t k = 0; k < in.size(); ++k) (reduced[k] ? reduced_dims : kept).push_back(in[k]);
    count = numel(reduced_dims);
  }

  bool is_float() const { return dtype == DType::f32; }
  // An f32 sum or mean: f32 accumulators in blocks, their totals in f64 (blocked_sum.h).
  bool blocked() const { return is_float() && kind != Kind::max; }

  // An accumulator's start: an f64 total for a blocked sum, else the identity.
  llvm::Value* start(LoweringContext& cx, int width) const {
    if (blocked()) return zero_total(cx, width);
    if (kind != Kind::max) return cx.constant(dtype, 0, width);
    return is_float() ? cx.f32c(-std::numeric_limits<float>::infinity(), width)
                      : cx.i32c(std::numeric_limits<int32_t>::min(), width);
  }

  // acc (+) x, for accumulators (f32 or f64 totals) alike. f32 max is
  // llvm.maximum: a nan anywhere makes the result nan, as in the reference.
  llvm::Value* combine(LoweringContext& cx, llvm::Value* acc, llvm::Value* x) const {
    auto& b = cx.b();
    if (kind != Kind::max) return is_float() ? b.CreateFAdd(acc, x) : b.CreateAdd(acc, x);
    return is_float() ? b.CreateMaximum(acc, x) : b.CreateSelect(b.CreateICmpSGT(x, acc), x, acc);
  }

  // The loop over [begin, end) accumulating `acc`: blocked for f32 sums.
  using Body = std::function<LoweringContext::Carried(llvm::Value*, const LoweringContext::Carried&)>;
  LoweringContext::Carried loop(LoweringContext& cx, int64_t begin, int64_t end, int64_t step,
                                const LoweringContext::Carried& acc, const Body& body) const {
    return for_blocks(cx, begin, end, step, acc, std::vector<bool>(acc.size(), blocked()), body);
  }

  // Combines the lanes of a vector accumulator into `scalar`.
  llvm::Value* horizontal(LoweringContext& cx, llvm::Value* vec, llvm::Value* scalar) const {
    auto& b = cx.b();
    llvm::Value* lanes = nullptr;
    if (kind == Kind::max) lanes = is_float() ? b.CreateFPMaximumReduce(vec) : b.CreateIntMaxReduce(vec, true);
    else lanes = is_float() ? add_lanes(cx, vec) : b.CreateAddReduce(vec);
    return combine(cx, scalar, lanes);
  }

  // The result from an accumulator: a mean divided by the count, an f64 total
  // divided and then rounded to f32 once.
  llvm::Value* finish(LoweringContext& cx, llvm::Value* acc, int width) const {
    auto& b = cx.b();
    if (kind == Kind::mean) acc = b.CreateFDiv(acc, llvm::ConstantFP::get(acc->getType(), static_cast<double>(count)));
    return blocked() ? b.CreateFPTrunc(acc, cx.reg_type(DType::f32, width)) : acc;
  }

  // The operand index from result (kept) and reduced indices.
  std::vector<llvm::Value*> operand_dims(const std::vector<llvm::Value*>& kept_dims,
                                         const std::vector<llvm::Value*>& reduced_idx) const {
    std::vector<llvm::Value*> dims;
    size_t k = 0, r = 0;
    for (size_t axis = 0; axis < in.size(); ++axis) dims.push_back(reduced[axis] ? reduced_idx[r++] : kept_dims[k++]);
    return dims;
  }
};

// Innermost axis reduced: per result element, vectors along the row.
void emit_row_reduction(const KernelEmitArgs& a, const Reduction& red) {
  LoweringContext& cx = a.cx;
  const int width = cx.vector_width();
  const int64_t inner = red.in.back();
  const int64_t vector_end = inner - inner % width;
  const Shape outer_reduced(red.reduced_dims.begin(), red.reduced_dims.end() - 1);
  const int64_t results = numel(red.kept);
  const std::string name = cx.unique_name(a.node.op() + ".rows");
  cx.parallel_for(name, results, LoweringContext::grain_for(red.count), [&](llvm::Value* begin, llvm::Value* end) {
    llvm::Value* out = a.result_ptr();
    cx.for_range(begin, end, 1, [&](llvm::Value* o) {
      const std::vector<llvm::Value*> kept_dims = unflatten(cx, o, red.kept);
      const auto at = [&](const std::vector<llvm::Value*>& rdims, llvm::Value* j, int w) {
        std::vector<llvm::Value*> r = rdims;
        r.push_back(j);
        const int lane_axis = w > 1 ? static_cast<int>(red.in.size()) - 1 : -1;
        return a.operands[0](ElementIndex{red.operand_dims(kept_dims, r), w, lane_axis});
      };
      const LoweringContext::Carried acc = cx.for_range(
          0, numel(outer_reduced), 1, {red.start(cx, width), red.start(cx, 1)},
          [&](llvm::Value* r, const LoweringContext::Carried& acc) {
            const std::vector<llvm::Value*> rdims = unflatten(cx, r, outer_reduced);
            const auto step = [&](int w) {
              return [&, w](llvm::Value* j, const LoweringContext::Carried& c) {
                return LoweringContext::Carried{red.combine(cx, c[0], at(rdims, j, w))};
              };
            };
            llvm::Value* vec = red.loop(cx, 0, vector_end, width, {acc[0]}, step(width))[0];
            llvm::Value* scalar = red.loop(cx, vector_end, inner, 1, {acc[1]}, step(1))[0];
            return LoweringContext::Carried{vec, scalar};
          });
      llvm::Value* total = vector_end > 0 ? red.horizontal(cx, acc[0], acc[1]) : acc[1];
      cx.store(red.dtype, out, o, red.finish(cx, total, 1));
    });
  });
}

// Innermost axis kept: vectors of results, each accumulated over the reduced
// axes in four interleaved chains (combined in a fixed order), so the adds'
// latency overlaps. The result's vectors are split across threads (a bias
// gradient, [1024, 256] -> [256], has only one row of results), the narrower
// vector at each row's end after them; each result element is computed by one
// fixed chain, whatever the thread count.
void emit_column_reduction(const KernelEmitArgs& a, const Reduction& red) {
  LoweringContext& cx = a.cx;
  auto& b = cx.b();
  const int w = cx.vector_width();
  constexpr int kChains = 4;
  const int64_t chained = red.count >= 4 * kChains ? red.count / kChains * kChains : 0;
  // The results at `dims` of the kept shape, `width` lanes along its last axis.
  const auto result = [&](std::vector<llvm::Value*> dims, int width) {
    const int lane_axis = width > 1 ? static_cast<int>(red.in.size()) - 1 : -1;
    const auto element = [&](llvm::Value* r) {
      return a.operands[0](ElementIndex{red.operand_dims(dims, unflatten(cx, r, red.reduced_dims)), width, lane_axis});
    };
    LoweringContext::Carried acc(kChains, red.start(cx, width));
    acc = red.loop(cx, 0, chained, kChains, acc, [&](llvm::Value* r, const LoweringContext::Carried& c) {
      LoweringContext::Carried next;
      for (int k = 0; k < kChains; ++k)
        next.push_back(red.combine(cx, c[static_cast<size_t>(k)], element(b.CreateAdd(r, cx.i64c(k)))));
      return next;
    });
    llvm::Value* total = red.combine(cx, red.combine(cx, acc[0], acc[1]), red.combine(cx, acc[2], acc[3]));
    total = red.loop(cx, chained, red.count, 1, {total}, [&](llvm::Value* r, const LoweringContext::Carried& c) {
      return LoweringContext::Carried{red.combine(cx, c[0], element(r))};
    })[0];
    return red.finish(cx, total, width);
  };
  if (red.kept.empty()) {  // a rank-0 operand: one result
    cx.store(red.dtype, a.result_ptr(), cx.i64c(0), result({}, 1));
    return;
  }
  const Shape outer(red.kept.begin(), red.kept.end() - 1);
  const int64_t inner = red.kept.back(), rows = numel(outer), vectors = inner / w, rest = inner % w;
  const auto store = [&](llvm::Value* row, llvm::Value* column, int width) {
    std::vector<llvm::Value*> dims = unflatten(cx, row, outer);
    dims.push_back(column);
    cx.store(red.dtype, a.result_ptr(), flat_offset(cx, dims, red.kept), result(dims, width));
  };
  if (vectors > 0)
    cx.parallel_for(cx.unique_name(a.node.op() + ".cols"), rows * vectors, LoweringContext::grain_for(red.count * w),
                    [&](llvm::Value* begin, llvm::Value* end) {
                      cx.for_range(begin, end, 1, [&](llvm::Value* i) {
                        store(b.CreateUDiv(i, cx.i64c(vectors)),
                              b.CreateMul(b.CreateURem(i, cx.i64c(vectors)), cx.i64c(w)), w);
                      });
                    });
  if (rest > 0) cx.for_range(0, rows, 1, [&](llvm::Value* row) { store(row, cx.i64c(vectors * w), static_cast<int>(rest)); });
}

KernelFn reduction(Kind kind) {
  return [kind](const KernelEmitArgs& a) {
    const Reduction red(kind, a.node);
    if (numel(red.kept) == 0) return;
    if (!red.in.empty() && red.reduced.back() && red.in.back() > 0)
      emit_row_reduction(a, red);
    else
      emit_column_reduction(a, red);
  };
}

}  // namespace

void register_reduction_emitters(EmitterRegistry& r) {
  r.add_kernel("sum", reduction(Kind::sum), KernelReads::generators);
  r.add_kernel("mean", reduction(Kind::mean), KernelReads::generators);
  r.add_kernel("max", reduction(Kind::max), KernelReads::generators);
}

}  // namespace kiln::compiler
