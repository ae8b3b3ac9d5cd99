// softmax, log_softmax {axis} and layer_norm {eps} (ops/normalization.cpp): kernel
// emitters in three passes over each line of elements along the normalized axis.
//
// The input is computed exactly once per element: the first pass reads it through
// its generator and parks it in the result buffer, the later passes read and
// rewrite it there (the line stays in cache). So the max and the exp-shift see the
// same values, however a fused producer computes them (a producer recomputed two
// ways can differ by an ulp, and exp(x - max) of an x above its line's max can
// overflow to inf), and an expensive producer is not evaluated three times.
//
//   softmax      pass 1: x -> out, max   pass 2: out = exp(out - max) (log_softmax:
//                out - max), sum of exp   pass 3: out /= sum (log_softmax: -= log(sum))
//   layer_norm   pass 1: x -> out, sum, max |x|   pass 2: out = scaled x - mean,
//                sums of out and out^2   pass 3: normalize, scale, shift
//                (details at emit_layer_norm)
//
// Loop structure, vectorized with the target's width W:
//  * normalized axis innermost (every layer_norm): one task per line walks it in
//    W-lane vectors plus a scalar remainder, and reduces the lanes at the end;
//  * another axis (softmax only): W adjacent lines along the innermost axis are
//    walked together, one vector per position on the axis, so the statistics are
//    per lane and no horizontal step is needed.
// Sums accumulate in f32 lanes, in blocks added into f64 totals (line_fold.h,
// blocked_sum.h: accurate however long the line; the reference sums in double;
// tests/op_table/rows_normalization.cpp states the tolerances). A line of
// -inf (a fully masked attention row) is shifted by 0, not by its max (-inf - -inf
// would be nan), and its exps sum to 0: its softmax is 0 and its log_softmax -inf,
// as in the reference.
#include <llvm/IR/Intrinsics.h>

#include <limits>

#include "compiler/codegen/families.h"
#include "compiler/codegen/line_fold.h"
#include "compiler/codegen/fast_math.h"

namespace kiln::compiler {

namespace {

using line_fold::Carried;
using line_fold::Fold;
using line_fold::Folds;
using line_fold::Step;
using line_fold::combine;
using line_fold::fold_line;
using line_fold::fold_range;

// `v` at w lanes: statistics of a contiguous line are scalars, splat to the
// vector steps; those of side-by-side lines already have their steps' width.
llvm::Value* at_width(LoweringContext& cx, llvm::Value* v, int w) {
  return v->getType()->isVectorTy() ? v : cx.splat(v, w);
}

// Constants of v's type (a scalar or a vector of lanes).
llvm::Value* negative_infinity(llvm::Value* v) {
  return llvm::ConstantFP::getInfinity(v->getType(), /*Negative=*/true);
}
llvm::Value* zero_like(llvm::Value* v) { return llvm::ConstantFP::get(v->getType(), 0.0); }
llvm::Value* one_like(llvm::Value* v) { return llvm::ConstantFP::get(v->getType(), 1.0); }

// Walks one line (or W side-by-side lines) with the given folds: fold_line or fold_range.
using Walk = std::function<Carried(const Folds& folds, const Step& step)>;

// The three softmax passes over one line, whatever its layout. `index(k, w)` is the
// operand (and result) index of line position k with w lanes.
struct SoftmaxLine {
  LoweringContext& cx;
  const Generator& x;
  const Shape& shape;
  llvm::Value* out;
  bool log;
  std::function<ElementIndex(llvm::Value* k, int w)> index;

  llvm::Value* offset(llvm::Value* k, int w) const { return flat_offset(cx, index(k, w).dims, shape); }

  void emit(const Walk& walk) const {
    auto& b = cx.b();
    llvm::Value* max = walk({Fold::max}, [&](llvm::Value* k, int w, const Carried& acc) {
      llvm::Value* v = x(index(k, w));
      cx.store(DType::f32, out, offset(k, w), v);
      return Carried{combine(cx, Fold::max, acc[0], v)};
    })[0];
    max = b.CreateSelect(b.CreateFCmpOEQ(max, negative_infinity(max)), zero_like(max), max);
    // Keeps exp(x - max) for softmax, x - max for log_softmax.
    llvm::Value* sum = walk({Fold::sum}, [&](llvm::Value* k, int w, const Carried& acc) {
      llvm::Value* at = offset(k, w);
      llvm::Value* shifted = b.CreateFSub(cx.load(DType::f32, out, at, w), at_width(cx, max, w));
      llvm::Value* e = emit_exp(cx, shifted);
      cx.store(DType::f32, out, at, log ? shifted : e);
      return Carried{b.CreateFAdd(acc[0], e)};
    })[0];
    // A fully masked line sums to 0: divide by (or take the log of) 1 instead.
    llvm::Value* nonzero = b.CreateSelect(b.CreateFCmpOEQ(sum, zero_like(sum)), one_like(sum), sum);
    llvm::Value* total = log ? emit_log(cx, nonzero) : nonzero;
    walk({}, [&](llvm::Value* k, int w, const Carried&) {
      llvm::Value* at = offset(k, w);
      llvm::Value* v = cx.load(DType::f32, out, at, w);
      llvm::Value* t = at_width(cx, total, w);
      cx.store(DType::f32, out, at, log ? b.CreateFSub(v, t) : b.CreateFDiv(v, t));
      return Carried{};
    });
  }
};

// The normalized axis is innermost: one line per row, statistics reduced across lanes.
void emit_softmax_rows(const KernelEmitArgs& a, bool log) {
  LoweringContext& cx = a.cx;
  const Shape& shape = a.node.in(0).shape;
  const int64_t n = shape.back();
  const int lane_axis = static_cast<int>(shape.size()) - 1;
  const Shape rows_shape(shape.begin(), shape.end() - 1);
  const std::string name = cx.unique_name(a.node.op() + ".rows");
  cx.parallel_for(name, numel(rows_shape), LoweringContext::grain_for(n), [&](llvm::Value* begin, llvm::Value* end) {
    llvm::Value* out = a.result_ptr();
    cx.for_range(begin, end, 1, [&](llvm::Value* row) {
      const std::vector<llvm::Value*> row_dims = unflatten(cx, row, rows_shape);
      const SoftmaxLine line{cx, a.operands[0], shape, out, log, [&](llvm::Value* k, int w) {
                               std::vector<llvm::Value*> dims = row_dims;
                               dims.push_back(k);
                               return ElementIndex{dims, w, w > 1 ? lane_axis : -1};
                             }};
      line.emit([&](const Folds& folds, const Step& step) { return fold_line(cx, n, folds, step); });
    });
  });
}

// The normalized axis is not innermost: the shape seen as [outer, n, mid, last].
// A unit of work is one (outer, mid) pair and a block of W positions of `last`:
// W lines side by side, each position on the axis one vector, so the statistics
// are per lane; the block past the last full vector takes its lines one by one.
void emit_softmax_columns(const KernelEmitArgs& a, bool log, size_t axis) {
  LoweringContext& cx = a.cx;
  const Shape& shape = a.node.in(0).shape;
  const int64_t n = shape[axis], last = shape.back();
  const int lane_axis = static_cast<int>(shape.size()) - 1;
  const Shape outer_shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(axis));
  const Shape mid_shape(shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, shape.end() - 1);
  const int64_t mid = numel(mid_shape);
  const int width = cx.vector_width();
  const int64_t vector_end = last - last % width;
  const int64_t blocks = (last + width - 1) / width;
  const std::string name = cx.unique_name(a.node.op() + ".cols");
  const int64_t units = numel(outer_shape) * mid * blocks;
  cx.parallel_for(name, units, LoweringContext::grain_for(n * width), [&](llvm::Value* begin, llvm::Value* end) {
    llvm::Value* out = a.result_ptr();
    cx.for_range(begin, end, 1, [&](llvm::Value* unit) {
      auto& b = cx.b();
      llvm::Value* group = b.CreateUDiv(unit, cx.i64c(blocks));
      const std::vector<llvm::Value*> outer_dims = unflatten(cx, b.CreateUDiv(group, cx.i64c(mid)), outer_shape);
      const std::vector<llvm::Value*> mid_dims = unflatten(cx, b.CreateURem(group, cx.i64c(mid)), mid_shape);
      const auto lines_at = [&](llvm::Value* j, int w) {
        const SoftmaxLine line{cx, a.operands[0], shape, out, log, [&, j](llvm::Value* k, int lanes) {
                                 std::vector<llvm::Value*> dims = outer_dims;
                                 dims.push_back(k);
                                 dims.insert(dims.end(), mid_dims.begin(), mid_dims.end());
                                 dims.push_back(j);
                                 return ElementIndex{dims, lanes, lanes > 1 ? lane_axis : -1};
                               }};
        line.emit([&](const Folds& folds, const Step& step) { return fold_range(cx, 0, n, 1, w, folds, step); });
      };
      // The block [first, first + W): one vector if it lies below vector_end, else single lines.
      llvm::Value* first = b.CreateMul(b.CreateURem(unit, cx.i64c(blocks)), cx.i64c(width));
      llvm::Value* stop = b.CreateAdd(first, cx.i64c(width));
      const auto min = [&](llvm::Value* x, int64_t y) {
        return b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, x, cx.i64c(y));
      };
      cx.for_range(first, min(stop, vector_end), width, [&](llvm::Value* j) { lines_at(j, width); });
      cx.for_range(b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, first, cx.i64c(vector_end)), min(stop, last), 1,
                   [&](llvm::Value* j) { lines_at(j, 1); });
    });
  });
}

KernelFn softmax(bool log) {
  return [log](const KernelEmitArgs& a) {
    const TensorType& t = a.node.in(0);
    if (t.numel() == 0) return;
    const auto axis = static_cast<size_t>(normalize_axis(a.node.attrs().get_int("axis"), t.rank()));
    if (axis + 1 == t.shape.size())
      emit_softmax_rows(a, log);
    else
      emit_softmax_columns(a, log, axis);
  };
}

// A power of two s (f32) with max_abs * s in [1, 4) for max_abs >= 0 (2^126 for 0
// and subnormals; inf and nan give 2^-126, and propagate through the sums anyway).
// Scaling by s is exact, so statistics of x * s cannot overflow or lose the
// subnormals' bits.
llvm::Value* unit_scale(LoweringContext& cx, llvm::Value* max_abs) {
  auto& b = cx.b();
  llvm::Value* exponent = b.CreateLShr(b.CreateBitCast(max_abs, b.getInt32Ty()), 23);  // biased
  exponent = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, exponent, cx.i32c(1));
  exponent = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, exponent, cx.i32c(253));
  return b.CreateBitCast(b.CreateShl(b.CreateSub(cx.i32c(254), exponent), 23), b.getFloatTy());
}

// layer_norm(x, gamma, beta) over the last axis, one row per line, in f32 lanes:
//   pass 1: x -> out; the sum of x * 2^-k (2^k >= 2D, so it cannot overflow) and max |x|;
//   pass 2: out = c = x * s - mean * s, with s = unit_scale(max |x|); sums of c and c^2;
//   pass 3: out = (c - mean(c)) * rstd / s * gamma + beta.
// Subtracting mean(c) is the "corrected two-pass" algorithm: c is exact for entries
// near the mean, so mean(c) recovers what rounding the mean to f32 lost (without
// it, a row like [3.618, 3.627] with eps 1e-5 is off by 2e-5 relative). rstd =
// 1 / sqrt(var(c) / s^2 + eps) is computed in double, as the reference adds eps
// (which may be below the smallest float) in double. The row's results 1 and 2
// are mean = (m + mean(c)) / s, with m the f32 mean of x * s that pass 2
// subtracts, and rstd, each computed in double and rounded once to f32.
void emit_layer_norm(const KernelEmitArgs& a) {
  LoweringContext& cx = a.cx;
  const Shape& shape = a.node.in(0).shape;
  if (numel(shape) == 0) return;
  const int64_t d = shape.back();
  const int lane_axis = static_cast<int>(shape.size()) - 1;
  const Shape rows_shape(shape.begin(), shape.end() - 1);
  const double eps = a.node.attrs().get_float("eps");
  int64_t headroom = 2;  // 2^k >= 2d
  while (headroom < 2 * d) headroom *= 2;
  const std::string name = cx.unique_name("layer_norm.rows");
  cx.parallel_for(name, numel(rows_shape), LoweringContext::grain_for(d), [&](llvm::Value* begin, llvm::Value* end) {
    auto& b = cx.b();
    llvm::Value* out = a.result_ptr();
    llvm::Value* means = a.result_ptr(1);
    llvm::Value* rstds = a.result_ptr(2);
    cx.for_range(begin, end, 1, [&](llvm::Value* row) {
      const std::vector<llvm::Value*> row_dims = unflatten(cx, row, rows_shape);
      llvm::Value* row_offset = b.CreateMul(row, cx.i64c(d), "", true, true);
      const auto offset = [&](llvm::Value* k) { return b.CreateAdd(row_offset, k, "", true, true); };
      const auto x_at = [&](llvm::Value* k, int w) {
        std::vector<llvm::Value*> dims = row_dims;
        dims.push_back(k);
        return a.operands[0](ElementIndex{dims, w, w > 1 ? lane_axis : -1});
      };
      const auto param_at = [&](size_t operand, llvm::Value* k, int w) {
        return a.operands[operand](ElementIndex{{k}, w, w > 1 ? 0 : -1});
      };
      llvm::Value* count = cx.f32c(static_cast<float>(d));

      // {sum of x * 2^-k, max |x|}
      const Carried first = fold_line(cx, d, {Fold::sum, Fold::max}, [&](llvm::Value* k, int w, const Carried& acc) {
        llvm::Value* v = x_at(k, w);
        cx.store(DType::f32, out, offset(k), v);
        llvm::Value* small = b.CreateFMul(v, cx.f32c(1.0f / static_cast<float>(headroom), w));
        return Carried{b.CreateFAdd(acc[0], small),
                       combine(cx, Fold::max, acc[1], b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, v))};
      });
      llvm::Value* scale = unit_scale(cx, first[1]);
      llvm::Value* scaled_mean =
          b.CreateFMul(b.CreateFMul(first[0], scale), cx.f32c(static_cast<float>(headroom) / static_cast<float>(d)));

      // {sum of c, sum of c^2}
      const Carried second = fold_line(cx, d, {Fold::sum, Fold::sum}, [&](llvm::Value* k, int w, const Carried& acc) {
        llvm::Value* v = b.CreateFMul(cx.load(DType::f32, out, offset(k), w), cx.splat(scale, w));
        llvm::Value* c = b.CreateFSub(v, cx.splat(scaled_mean, w));
        cx.store(DType::f32, out, offset(k), c);
        return Carried{b.CreateFAdd(acc[0], c), b.CreateFAdd(acc[1], b.CreateFMul(c, c))};
      });
      llvm::Value* correction = b.CreateFDiv(second[0], count);
      llvm::Value* var = b.CreateFSub(b.CreateFDiv(second[1], count), b.CreateFMul(correction, correction));
      // Rounding may leave a constant row's variance at -tiny; nan (a row with an inf
      // or a nan) stays, for the rstd result.
      var = b.CreateSelect(b.CreateFCmpOLT(var, cx.f32c(0)), cx.f32c(0), var);

      // In double: rstd / s, with a finite overflow clamped to the largest float (a
      // constant row then gives 0 * FLT_MAX = 0, like the reference's 0 / tiny);
      // only an exact 0 / 0 (var + eps == 0) stays inf and makes nan.
      llvm::Type* f64 = b.getDoubleTy();
      llvm::Value* s = b.CreateFPExt(scale, f64);
      llvm::Value* unscaled_var = b.CreateFDiv(b.CreateFPExt(var, f64), b.CreateFMul(s, s));
      llvm::Value* root =
          b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, b.CreateFAdd(unscaled_var, llvm::ConstantFP::get(f64, eps)));
      llvm::Value* rstd = b.CreateFDiv(llvm::ConstantFP::get(f64, 1.0), root);
      llvm::Value* factor = b.CreateFDiv(rstd, s);  // = 1 / (root * s) exactly: s is a power of two
      llvm::Value* largest = llvm::ConstantFP::get(f64, std::numeric_limits<float>::max());
      llvm::Value* finite = b.CreateFCmpONE(factor, llvm::ConstantFP::getInfinity(f64));
      factor = b.CreateSelect(finite, b.CreateMinNum(factor, largest), factor);
      llvm::Value* rstd_over_s = b.CreateFPTrunc(factor, b.getFloatTy());

      // Results 1 and 2. A row with an infinity has an infinite m but a nan mean(c)
      // (c = x * s - inf), which is dropped there.
      llvm::Value* known_correction = b.CreateSelect(b.CreateFCmpUNO(correction, correction), cx.f32c(0), correction);
      llvm::Value* mean =
          b.CreateFDiv(b.CreateFAdd(b.CreateFPExt(scaled_mean, f64), b.CreateFPExt(known_correction, f64)), s);
      cx.store(DType::f32, means, row, b.CreateFPTrunc(mean, b.getFloatTy()));
      cx.store(DType::f32, rstds, row, b.CreateFPTrunc(rstd, b.getFloatTy()));

      fold_line(cx, d, {}, [&](llvm::Value* k, int w, const Carried&) {
        llvm::Value* c = b.CreateFSub(cx.load(DType::f32, out, offset(k), w), cx.splat(correction, w));
        llvm::Value* scaled = b.CreateFMul(b.CreateFMul(c, cx.splat(rstd_over_s, w)), param_at(1, k, w));
        cx.store(DType::f32, out, offset(k), b.CreateFAdd(scaled, param_at(2, k, w)));
        return Carried{};
      });
    });
  });
}

}  // namespace

void register_normalization_emitters(EmitterRegistry& r) {
  r.add_kernel("softmax", softmax(false), KernelReads::generators);
  r.add_kernel("log_softmax", softmax(true), KernelReads::generators);
  r.add_kernel("layer_norm", emit_layer_norm, KernelReads::generators);
}

}  // namespace kiln::compiler
