// flash_attention and its backward as FlashAttention 2 computes them: blocks of
// queries against blocks of keys, with the softmax's running max and sum per
// query row, so that the loops over keys and queries run at run time and every
// buffer is sized by the blocks (48 KiB on the stack for heads of 64), whatever
// S and T are.
// With {causal=1}, blocks of keys entirely past a block of queries' diagonal are
// skipped (half the work when T == S) and the blocks across it are masked by
// element. The additive mask operand is read as it broadcasts (a scalar, a
// key padding mask [B, 1, 1, S], or a full [.., T, S] one, gathered).
//
// Forward: queries in the vector lanes. A block of Br queries (Q vectors of W)
// is transposed once, q^T [d, Br], so the scores of one key for the block are
// d FMAs of a broadcast k[j, c] with q^T's rows, and the softmax's max and sum
// over keys are lane-wise: no horizontal reduction. o^T [dv, Br] is accumulated
// on the stack and transposed out once per block of queries.
// Backward: keys in the lanes, a parallel loop over (batch, head). A block of Bc
// keys is transposed once, k^T and v^T [d, Bc], and its dk^T and dv^T accumulate
// on the stack while every block of queries that sees it recomputes its p from
// lse, then dv^T += do^T p, dk^T += q^T ds, and dq += ds k in place.
#include "compiler/codegen/attention_blocked.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "compiler/codegen/attention_lanes.h"
#include "compiler/codegen/blocked_sum.h"
#include "compiler/codegen/fast_math.h"

namespace kiln::compiler {
namespace {

constexpr float kInfinity = std::numeric_limits<float>::infinity();
// The row kernel unrolls every key vector of a row (its compile time and
// registers grow with S). Measured on one Sapphire Rapids core, 4 heads of 64,
// T = S, forward and backward ms, row kernel / blocked: S 32 (batch 32) 0.8 /
// 1.0 and 3.1 / 2.6; S 64 (batch 32) 5.2 / 2.0 and 15.9 / 5.1, with a [T, S]
// mask 4.8 / 2.6 and 14.4 / 6.6; S 128 (batch 8) 3.5 / 1.9 and 11.9 / 4.8. A
// decoder step's one query row against 256 keys (batch 64): 1.4 / 4.7 (257).
// A language model's generation at batch 1 over 1,001 cached positions (d 128,
// 4 layers, 1 thread): 2,556 tokens/s with the row kernel, which skips the key
// vectors the mask drops, against 1,537 blocked (skipping dropped key blocks),
// for 1.9 s of compile instead of 0.3 (the row kernel unrolls its key vectors):
// the row kernel up to 1,024 keys.
constexpr int64_t kRowKernelMaxKeys = 32;
constexpr int64_t kFewRowsMaxKeys = 1024;
constexpr int64_t kForwardKeyBlock = 64;  // Bc of the forward
constexpr int64_t kBackwardQueryBlock = 32;

struct Problem {
  Shape batch_shape;  // the leading dims, and the heads when packed
  int64_t batch = 0, t = 0, s = 0, d = 0, dv = 0, heads = 0;
  float scale = 0;
  bool causal = false;
  DType qkv = DType::f32;
  // The mask's element strides along the batch dims, T and S of the scores it
  // broadcasts to (0 where it broadcasts).
  std::vector<int64_t> mask_batch_strides;
  int64_t mask_t_stride = 0, mask_s_stride = 0;

  int64_t row_stride(int64_t cols) const { return heads ? heads * cols : cols; }
};

Problem problem_of(const NodeRef& node) {
  const Shape& q = node.in(0).shape;
  Problem a;
  a.heads = node.attrs().get_int("heads");
  const int64_t h = a.heads ? a.heads : 1;
  a.batch_shape = Shape(q.begin(), q.end() - 2);
  if (a.heads) a.batch_shape.push_back(a.heads);
  a.batch = numel(a.batch_shape);
  a.t = q[q.size() - 2];
  a.d = q.back() / h;
  a.s = node.in(1).shape[q.size() - 2];
  a.dv = node.in(2).shape.back() / h;
  a.scale = static_cast<float>(node.attrs().get_float("scale"));
  a.causal = node.attrs().get_int("causal") == 1;
  a.qkv = node.in(0).dtype;
  const Shape& mask = node.in(3).shape;
  std::vector<int64_t> strides(a.batch_shape.size() + 2, 0);
  int64_t stride = 1;
  for (size_t k = 0; k < mask.size(); ++k) {
    const int64_t m = mask[mask.size() - 1 - k];
    if (m != 1) strides[strides.size() - 1 - k] = stride;
    stride *= m;
  }
  a.mask_t_stride = strides[strides.size() - 2];
  a.mask_s_stride = strides.back();
  strides.resize(strides.size() - 2);
  a.mask_batch_strides = strides;
  return a;
}

// exp(x) for the softmax's x = s - max or s - lse, about 0 at most (or -inf, or
// nan): emit_exp's range reduction and polynomial (fast_math.cpp) without the
// overflow and subnormal handling such x never need, a third fewer
// instructions on the critical port. x below ln of the smallest normal float
// gives 0; with `may_be_positive` (the backward's x, rounded), x is held below
// exp's overflow.
llvm::Value* softmax_exp(LoweringContext& cx, llvm::Value* x, bool may_be_positive) {
  static constexpr float kPoly[] = {1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f,
                                    4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};
  static constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f, kSmallest = -87.33654475f;
  auto& b = cx.b();
  const int w = cx.vector_width();
  const auto f = [&](float v) { return cx.f32c(v, w); };
  llvm::Value* low = b.CreateFCmpOLT(x, f(kSmallest));  // nan stays nan
  llvm::Value* xc = b.CreateSelect(low, f(kSmallest), x);
  if (may_be_positive) xc = b.CreateSelect(b.CreateFCmpOGT(xc, f(88.0f)), f(88.0f), xc);
  llvm::Value* n = b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, b.CreateFMul(xc, f(1.44269504088896341f)));
  llvm::Value* r = b.CreateFSub(b.CreateFSub(xc, b.CreateFMul(n, f(kLn2Hi))), b.CreateFMul(n, f(kLn2Lo)));
  llvm::Value* p = emit_polynomial(cx, r, kPoly, static_cast<int>(std::size(kPoly)));
  p = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {p->getType()}, {p, b.CreateFMul(r, r), b.CreateFAdd(r, f(1.0f))});
  llvm::Value* bits = b.CreateShl(b.CreateAdd(b.CreateFPToSI(n, cx.reg_type(DType::i32, w)), cx.i32c(127, w)),
                                  cx.i32c(23, w));
  llvm::Value* y = b.CreateFMul(p, b.CreateBitCast(bits, p->getType()));
  return b.CreateSelect(low, f(0.0f), y);
}

// Accumulators of a tile of FMAs: half the vector registers.
int64_t accumulators(const LoweringContext& cx) { return cx.vector_width() >= 16 ? 16 : 8; }

llvm::Value* min_i64(LoweringContext& cx, llvm::Value* x, llvm::Value* y) {
  return cx.b().CreateSelect(cx.b().CreateICmpSLT(x, y), x, y);
}

llvm::Value* max_i64(LoweringContext& cx, llvm::Value* x, llvm::Value* y) {
  return cx.b().CreateSelect(cx.b().CreateICmpSGT(x, y), x, y);
}

// <W x i32>: x (i64) in every lane.
llvm::Value* splat_i32(LoweringContext& cx, llvm::Value* x) {
  return cx.b().CreateVectorSplat(static_cast<unsigned>(cx.vector_width()), cx.b().CreateTrunc(x, cx.b().getInt32Ty()));
}

// <W x i32>: start + lane.
llvm::Value* lane_indices(LoweringContext& cx, llvm::Value* start) {
  std::vector<llvm::Constant*> iota;
  for (int l = 0; l < cx.vector_width(); ++l) iota.push_back(cx.b().getInt32(static_cast<uint32_t>(l)));
  return cx.b().CreateAdd(splat_i32(cx, start), llvm::ConstantVector::get(iota));
}

// The per-(batch, head) operands and results of either kernel.
struct Head {
  llvm::Value *q, *k, *v, *mask;  // mask: at this batch's first element
};

Head head_at(LoweringContext& cx, const KernelEmitArgs& args, const Problem& a, llvm::Value* bh) {
  auto& b = cx.b();
  const std::vector<llvm::Value*> index = unflatten(cx, bh, a.batch_shape);
  llvm::Value* mask_at = cx.i64c(0);
  for (size_t k = 0; k < index.size(); ++k)
    mask_at = b.CreateAdd(mask_at, offset(cx, index[k], a.mask_batch_strides[k]));
  return {head_matrix_ptr(cx, a.heads, args.operand_ptr(0), bh, a.t, a.d, a.qkv),
          head_matrix_ptr(cx, a.heads, args.operand_ptr(1), bh, a.s, a.d, a.qkv),
          head_matrix_ptr(cx, a.heads, args.operand_ptr(2), bh, a.s, a.dv, a.qkv),
          b.CreateInBoundsGEP(b.getFloatTy(), args.operand_ptr(3), mask_at)};
}

// W mask elements at mask[at + min(start + lane, limit - 1) * stride]: the lanes
// run along T or S (`limit` of them); lanes past it read the last one.
llvm::Value* mask_lanes(LoweringContext& cx, const Lanes& lanes, llvm::Value* mask, llvm::Value* at,
                        llvm::Value* start, int64_t limit, int64_t stride) {
  auto& b = cx.b();
  const int w = cx.vector_width();
  if (stride == 0) return lanes.broadcast(mask, at);
  llvm::Value* position = lane_indices(cx, start);
  llvm::Value* last = b.CreateVectorSplat(static_cast<unsigned>(w), b.getInt32(static_cast<uint32_t>(limit - 1)));
  position = b.CreateSelect(b.CreateICmpSLT(position, last), position, last);
  llvm::Value* element = b.CreateAdd(b.CreateVectorSplat(static_cast<unsigned>(w), at),
                                     b.CreateMul(b.CreateSExt(position, llvm::FixedVectorType::get(cx.i64(), w)),
                                                 b.CreateVectorSplat(static_cast<unsigned>(w), cx.i64c(stride))));
  llvm::Value* ptrs = b.CreateInBoundsGEP(b.getFloatTy(), mask, element);
  return b.CreateMaskedGather(lanes.vec(), ptrs, llvm::Align(4));
}

// dst[c * width + j] = src[min(first + j, rows - 1) * stride + c] for j < width,
// c < cols: a block of a [rows, cols] matrix of `dtype`, transposed to f32 (its
// rows past the matrix repeat the last, so that every lane holds a finite value).
void transpose_block(LoweringContext& cx, llvm::Value* dst, int64_t width, llvm::Value* src, DType dtype,
                     llvm::Value* first, int64_t rows, int64_t cols, int64_t stride) {
  auto& b = cx.b();
  cx.for_range(0, width, 1, [&](llvm::Value* j) {
    llvm::Value* row = min_i64(cx, b.CreateAdd(first, j), cx.i64c(rows - 1));
    cx.for_range(0, cols, 1, [&](llvm::Value* c) {
      b.CreateStore(cx.load(dtype, src, b.CreateAdd(offset(cx, row, stride), c), 1),
                    b.CreateInBoundsGEP(b.getFloatTy(), dst, b.CreateAdd(offset(cx, c, width), j)));
    });
  });
}

// acc[u][v] += sum over c < depth of broadcast(x_u[c]) * rows[c * width + v * W]:
// `xs` are pointers (with their element offsets `x_at`) of `x_dtype`; rows is
// an f32 [depth, width] buffer; the result is acc in the order u * vectors + v.
LoweringContext::Carried broadcast_tile(LoweringContext& cx, const Lanes& lanes, llvm::Value* x,
                                        const std::vector<llvm::Value*>& x_at, DType x_dtype, llvm::Value* rows,
                                        int64_t width, int64_t vectors, int64_t depth, LoweringContext::Carried acc) {
  const int w = cx.vector_width();
  return cx.for_range(0, depth, 1, std::move(acc), [&](llvm::Value* c, const LoweringContext::Carried& sums) {
    std::vector<llvm::Value*> r;
    for (int64_t v = 0; v < vectors; ++v) r.push_back(lanes.load(rows, offset(cx, c, width, v * w), w));
    LoweringContext::Carried next;
    for (llvm::Value* at : x_at) {
      llvm::Value* xs = lanes.broadcast(x, cx.b().CreateAdd(at, c), x_dtype);
      for (int64_t v = 0; v < vectors; ++v) next.push_back(lanes.fma(xs, r[static_cast<size_t>(v)], sums[next.size()]));
    }
    return next;
  });
}

// ---- forward ----

struct Forward {
  LoweringContext& cx;
  const Lanes& lanes;
  const Problem& a;
  int64_t vectors, br;  // query vectors per block, and Br = vectors * W
  int64_t per_tile;     // keys per tile of scores, columns of o^T per tile of its sums
  Head x;
  llvm::Value *q0, *q_t, *p, *o_t;  // the block's first query; stack buffers

  // Queries whose lanes are rows past T hold row T-1's values, and their results are dropped.
  llvm::Value* query_lanes(int64_t v) const {
    return lane_indices(cx, cx.b().CreateAdd(q0, cx.i64c(v * cx.vector_width())));
  }

  // The keys the block's last query sees: min(S, q_last + S - T + 1) when causal.
  llvm::Value* key_end() const {
    if (!a.causal) return cx.i64c(a.s);
    llvm::Value* last = min_i64(cx, cx.b().CreateAdd(q0, cx.i64c(br - 1)), cx.i64c(a.t - 1));
    return max_i64(cx, cx.i64c(0), cx.b().CreateAdd(last, cx.i64c(a.s - a.t + 1)));
  }

  // Score vector v of key j (i64): scale q.k + mask, -inf where dropped.
  llvm::Value* score(llvm::Value* product, llvm::Value* j, int64_t v) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    llvm::Value* key = min_i64(cx, j, cx.i64c(a.s - 1));
    llvm::Value* m = mask_lanes(cx, lanes, x.mask, offset(cx, key, a.mask_s_stride),
                                b.CreateAdd(q0, cx.i64c(v * w)), a.t, a.mask_t_stride);
    llvm::Value* s = lanes.fma(product, lanes.splat(a.scale), m);
    llvm::Value* kept = b.CreateVectorSplat(static_cast<unsigned>(w), b.CreateICmpSLT(j, cx.i64c(a.s)));
    if (a.causal) {  // j <= i + S - T
      llvm::Value* limit = splat_i32(cx, b.CreateAdd(j, cx.i64c(a.t - a.s)));
      kept = b.CreateAnd(kept, b.CreateICmpSLE(limit, query_lanes(v)));
    }
    return b.CreateSelect(kept, s, lanes.splat(-kInfinity));
  }

  // The scores of keys k0 .. k0 + Bc into p [Bc, Br]; returns their max per query.
  LoweringContext::Carried scores(llvm::Value* k0) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    const int64_t stride = a.row_stride(a.d);
    LoweringContext::Carried init(static_cast<size_t>(vectors), lanes.splat(-kInfinity));
    return cx.for_range(0, kForwardKeyBlock, per_tile, init, [&](llvm::Value* jj, const LoweringContext::Carried& max) {
      std::vector<llvm::Value*> keys, rows;
      for (int64_t u = 0; u < per_tile; ++u) {
        keys.push_back(b.CreateAdd(k0, b.CreateAdd(jj, cx.i64c(u))));
        rows.push_back(offset(cx, min_i64(cx, keys.back(), cx.i64c(a.s - 1)), stride));
      }
      const LoweringContext::Carried products =
          broadcast_tile(cx, lanes, x.k, rows, a.qkv, q_t, br, vectors, a.d,
                         LoweringContext::Carried(static_cast<size_t>(per_tile * vectors), lanes.splat(0.0f)));
      LoweringContext::Carried next = max;
      for (int64_t u = 0; u < per_tile; ++u)
        for (int64_t v = 0; v < vectors; ++v) {
          llvm::Value* s = score(products[static_cast<size_t>(u * vectors + v)], keys[static_cast<size_t>(u)], v);
          lanes.store(s, p, offset(cx, b.CreateAdd(jj, cx.i64c(u)), br, v * w), w);
          llvm::Value*& max = next[static_cast<size_t>(v)];
          max = b.CreateSelect(b.CreateFCmpOGT(s, max), s, max);  // one vmaxps; a nan s passes, as maxnum
        }
      return next;
    });
  }

  // p = exp(p - shift) in place; returns the sums per query.
  LoweringContext::Carried exponentials(const LoweringContext::Carried& shift) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    LoweringContext::Carried init(static_cast<size_t>(vectors), lanes.splat(0.0f));
    return cx.for_range(0, kForwardKeyBlock, 1, init, [&](llvm::Value* j, const LoweringContext::Carried& sums) {
      LoweringContext::Carried next;
      for (int64_t v = 0; v < vectors; ++v) {
        llvm::Value* at = offset(cx, j, br, v * w);
        llvm::Value* e = softmax_exp(cx, b.CreateFSub(lanes.load(p, at, w), shift[static_cast<size_t>(v)]), false);
        lanes.store(e, p, at, w);
        next.push_back(b.CreateFAdd(sums[static_cast<size_t>(v)], e));
      }
      return next;
    });
  }

  // o^T's columns c0 .. c0 + n: o^T * alpha + v[k0 .. k0 + keys]^T p.
  void weighted_values(llvm::Value* c0, int64_t n, llvm::Value* k0, llvm::Value* keys,
                       const LoweringContext::Carried& alpha) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    LoweringContext::Carried acc;
    std::vector<llvm::Value*> at;
    for (int64_t c = 0; c < n; ++c)
      for (int64_t v = 0; v < vectors; ++v) {
        at.push_back(offset(cx, b.CreateAdd(c0, cx.i64c(c)), br, v * w));
        acc.push_back(b.CreateFMul(lanes.load(o_t, at.back(), w), alpha[static_cast<size_t>(v)]));
      }
    const int64_t stride = a.row_stride(a.dv);
    acc = cx.for_range(cx.i64c(0), keys, 1, acc, [&](llvm::Value* j, const LoweringContext::Carried& sums) {
      std::vector<llvm::Value*> weights;
      for (int64_t v = 0; v < vectors; ++v) weights.push_back(lanes.load(p, offset(cx, j, br, v * w), w));
      llvm::Value* row = b.CreateAdd(offset(cx, b.CreateAdd(k0, j), stride), c0);
      LoweringContext::Carried next;
      for (int64_t c = 0; c < n; ++c) {
        llvm::Value* value = lanes.broadcast(x.v, b.CreateAdd(row, cx.i64c(c)), a.qkv);
        for (int64_t v = 0; v < vectors; ++v)
          next.push_back(lanes.fma(value, weights[static_cast<size_t>(v)], sums[next.size()]));
      }
      return next;
    });
    for (size_t i = 0; i < acc.size(); ++i) lanes.store(acc[i], o_t, at[i], w);
  }

  void all_values(llvm::Value* k0, llvm::Value* keys, const LoweringContext::Carried& alpha) const {
    const int64_t main = a.dv / per_tile * per_tile;
    cx.for_range(0, main, per_tile, [&](llvm::Value* c0) { weighted_values(c0, per_tile, k0, keys, alpha); });
    if (main < a.dv) weighted_values(cx.i64c(main), a.dv - main, k0, keys, alpha);
  }

  // One block of keys at k0 (of `end` the block sees); carried: the running
  // max (f32) and sum (f64) per query vector.
  LoweringContext::Carried key_block(llvm::Value* k0, llvm::Value* end, const LoweringContext::Carried& state) const {
    auto& b = cx.b();
    const LoweringContext::Carried max = scores(k0);
    LoweringContext::Carried next(state.size()), shift, alpha;
    for (int64_t v = 0; v < vectors; ++v) {
      const auto i = static_cast<size_t>(v);
      next[i] = b.CreateMaxNum(state[i], max[i]);
      // Nothing seen yet (max -inf): shift by 0, so p = exp(-inf) = 0, not nan.
      shift.push_back(b.CreateSelect(b.CreateFCmpOEQ(next[i], lanes.splat(-kInfinity)), lanes.splat(0.0f), next[i]));
      alpha.push_back(emit_exp(cx, b.CreateFSub(state[i], shift.back())));
    }
    const LoweringContext::Carried sums = exponentials(shift);
    llvm::Type* wide = llvm::FixedVectorType::get(b.getDoubleTy(), static_cast<unsigned>(cx.vector_width()));
    for (int64_t v = 0; v < vectors; ++v) {
      const auto i = static_cast<size_t>(v);
      next[vectors + v] = b.CreateFAdd(b.CreateFMul(state[vectors + i], b.CreateFPExt(alpha[i], wide)),
                                       b.CreateFPExt(sums[i], wide));
    }
    all_values(k0, min_i64(cx, cx.i64c(kForwardKeyBlock), b.CreateSub(end, k0)), alpha);
    return next;
  }

  // o = o^T / sum and lse = max + log(sum) of the block's rows below T.
  void store_rows(const LoweringContext::Carried& state, llvm::Value* o, llvm::Value* lse, llvm::Value* row_buffer) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    for (int64_t v = 0; v < vectors; ++v) {
      const auto i = static_cast<size_t>(v);
      llvm::Value* empty = b.CreateFCmpOEQ(state[i], lanes.splat(-kInfinity));  // attends to nothing
      llvm::Value* sum = b.CreateFPTrunc(state[vectors + i], lanes.vec());
      lanes.store(b.CreateSelect(empty, lanes.splat(-kInfinity), b.CreateFAdd(state[i], emit_log(cx, sum))), row_buffer,
                  cx.i64c(v * w), w);
      lanes.store(b.CreateSelect(empty, lanes.splat(0.0f), b.CreateFDiv(lanes.splat(1.0f), sum)), row_buffer,
                  cx.i64c(br + v * w), w);
    }
    const int64_t stride = a.row_stride(a.dv);
    llvm::Value* rows = min_i64(cx, cx.i64c(br), b.CreateSub(cx.i64c(a.t), q0));
    cx.for_range(cx.i64c(0), rows, 1, [&](llvm::Value* i) {
      llvm::Value* row = b.CreateAdd(q0, i);
      b.CreateStore(b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), row_buffer, i)),
                    b.CreateInBoundsGEP(b.getFloatTy(), lse, row));
      llvm::Value* inverse =
          b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), row_buffer, b.CreateAdd(i, cx.i64c(br))));
      cx.for_range(0, a.dv, 1, [&](llvm::Value* c) {
        llvm::Value* sum = b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), o_t, b.CreateAdd(offset(cx, c, br), i)));
        b.CreateStore(b.CreateFMul(sum, inverse),
                      b.CreateInBoundsGEP(b.getFloatTy(), o, b.CreateAdd(offset(cx, row, stride), c)));
      });
    });
  }
};

// Block r of a head's blocks of queries, in the order 0, n-1, 1, n-2, ...: the
// thread pool splits the tasks into contiguous ranges, and with causal a block's
// work grows with its index, so neighbours pair a short block with a long one.
llvm::Value* balanced_block(LoweringContext& cx, llvm::Value* r, int64_t n) {
  auto& b = cx.b();
  llvm::Value* half = b.CreateLShr(r, cx.i64c(1));
  llvm::Value* odd = b.CreateTrunc(b.CreateAnd(r, cx.i64c(1)), b.getInt1Ty());
  return b.CreateSelect(odd, b.CreateSub(cx.i64c(n - 1), half), half);
}

// ---- backward ----

struct Backward {
  LoweringContext& cx;
  const Lanes& lanes;
  const Problem& a;
  int64_t key_vectors, bc;      // Bc = key_vectors * W
  int64_t per_tile, dq_per_tile;  // rows per tile of p and ds, columns per tile of dk^T and dv^T; rows of dq
  DType o_dtype;
  Head x;
  llvm::Value *o, *lse, *d_o, *dq;
  llvm::Value *k0, *k_t, *v_t, *dk_t, *dv_t, *p, *ds;  // the key block's first key; stack buffers

  int64_t qk_stride() const { return a.row_stride(a.d); }
  int64_t v_stride() const { return a.row_stride(a.dv); }
  llvm::Value* clamped_row(llvm::Value* i) const { return min_i64(cx, i, cx.i64c(a.t - 1)); }

  // D_i = do_i . o_i
  llvm::Value* row_dot(llvm::Value* row) const {
    const int w = cx.vector_width();
    llvm::Value* acc = lanes.splat(0.0f);
    for (int64_t c = 0; c * w < a.dv; ++c) {
      const int64_t n = lanes.in_vector(c, a.dv);
      llvm::Value* at = offset(cx, row, v_stride(), c * w);
      acc = lanes.fma(lanes.load(d_o, at, n), lanes.load(o, at, n, o_dtype), acc);
    }
    return cx.splat(add_lanes(cx, acc), w);
  }

  // Whether query i (its row `row`, its lse `row_lse`) passes a gradient: not a
  // row past T, nor one that attended to nothing (lse -inf).
  llvm::Value* live(llvm::Value* i, llvm::Value* row_lse) const {
    return cx.b().CreateAnd(cx.b().CreateICmpSLT(i, cx.i64c(a.t)), cx.b().CreateFCmpONE(row_lse, cx.f32c(-kInfinity)));
  }

  llvm::Value* lse_of(llvm::Value* row) const {
    return cx.b().CreateLoad(cx.b().getFloatTy(), cx.b().CreateInBoundsGEP(cx.b().getFloatTy(), lse, row));
  }

  // p of query i (its row clamped to `row`) against the key block, from the
  // products s = q_i . k_j (key vectors), into p at row r.
  void weights_row(llvm::Value* i, llvm::Value* row, llvm::Value* r, const std::vector<llvm::Value*>& s) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    llvm::Value* row_lse = lse_of(row);
    llvm::Value* shift = cx.splat(row_lse, w);
    llvm::Value* row_kept = b.CreateVectorSplat(static_cast<unsigned>(w), live(i, row_lse));
    llvm::Value* mask_at = offset(cx, row, a.mask_t_stride);
    for (int64_t v = 0; v < key_vectors; ++v) {
      llvm::Value* first = b.CreateAdd(k0, cx.i64c(v * w));
      llvm::Value* keys = lane_indices(cx, first);
      llvm::Value* m = mask_lanes(cx, lanes, x.mask, mask_at, first, a.s, a.mask_s_stride);
      llvm::Value* kept = b.CreateAnd(row_kept, b.CreateICmpSLT(keys, splat_i32(cx, cx.i64c(a.s))));
      if (a.causal)  // j <= i + S - T
        kept = b.CreateAnd(kept, b.CreateICmpSLE(keys, splat_i32(cx, b.CreateAdd(i, cx.i64c(a.s - a.t)))));
      llvm::Value* score = lanes.fma(s[static_cast<size_t>(v)], lanes.splat(a.scale), m);
      llvm::Value* weight = softmax_exp(cx, b.CreateFSub(score, shift), true);
      lanes.store(b.CreateSelect(kept, weight, lanes.splat(0.0f)), p, offset(cx, r, bc, v * w), w);
    }
  }

  // ds = p (dp - D_i) scale of query i at row r of p, from the products dp =
  // do_i . v_j (key vectors); 0 for a row that passes no gradient (where do
  // may be anything: 0 times it could be nan).
  void score_gradients_row(llvm::Value* i, llvm::Value* row, llvm::Value* r, const std::vector<llvm::Value*>& dp) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    llvm::Value* row_kept = live(i, lse_of(row));
    llvm::Value* d = row_dot(row);
    for (int64_t v = 0; v < key_vectors; ++v) {
      llvm::Value* at = offset(cx, r, bc, v * w);
      llvm::Value* d_score =
          b.CreateFMul(b.CreateFMul(lanes.load(p, at, w), b.CreateFSub(dp[static_cast<size_t>(v)], d)), lanes.splat(a.scale));
      lanes.store(b.CreateSelect(row_kept, d_score, lanes.splat(0.0f)), ds, at, w);
    }
  }

  // p and ds of the rows i0 + r0 .. + per_tile: the s tile's weights are stored
  // before the dp tile is made (both tiles live at once would spill).
  void weights_tile(llvm::Value* i0, llvm::Value* r0) const {
    auto& b = cx.b();
    std::vector<llvm::Value*> is, rows, q_at, do_at, rs;
    for (int64_t r = 0; r < per_tile; ++r) {
      is.push_back(b.CreateAdd(i0, b.CreateAdd(r0, cx.i64c(r))));
      rows.push_back(clamped_row(is.back()));
      q_at.push_back(offset(cx, rows.back(), qk_stride()));
      do_at.push_back(offset(cx, rows.back(), v_stride()));
      rs.push_back(b.CreateAdd(r0, cx.i64c(r)));
    }
    const auto of_row = [&](const LoweringContext::Carried& tile, int64_t r) {
      const auto from = tile.begin() + static_cast<std::ptrdiff_t>(r * key_vectors);
      return std::vector<llvm::Value*>(from, from + key_vectors);
    };
    const LoweringContext::Carried zeros(static_cast<size_t>(per_tile * key_vectors), lanes.splat(0.0f));
    const LoweringContext::Carried s = broadcast_tile(cx, lanes, x.q, q_at, a.qkv, k_t, bc, key_vectors, a.d, zeros);
    for (int64_t r = 0; r < per_tile; ++r) {
      const auto k = static_cast<size_t>(r);
      weights_row(is[k], rows[k], rs[k], of_row(s, r));
    }
    const LoweringContext::Carried dp = broadcast_tile(cx, lanes, d_o, do_at, DType::f32, v_t, bc, key_vectors, a.dv, zeros);
    for (int64_t r = 0; r < per_tile; ++r) {
      const auto k = static_cast<size_t>(r);
      score_gradients_row(is[k], rows[k], rs[k], of_row(dp, r));
    }
  }

  // acc_t[c0 .. c0 + n] += x[rows of the block, c0 .. c0 + n]^T weights: dv^T
  // from do and p, dk^T from q and ds.
  void accumulate_columns(llvm::Value* acc_t, llvm::Value* c0, int64_t n, llvm::Value* xs, DType x_dtype,
                          int64_t stride, llvm::Value* weights, llvm::Value* i0) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    LoweringContext::Carried acc;
    std::vector<llvm::Value*> at;
    for (int64_t c = 0; c < n; ++c)
      for (int64_t v = 0; v < key_vectors; ++v) {
        at.push_back(offset(cx, b.CreateAdd(c0, cx.i64c(c)), bc, v * w));
        acc.push_back(lanes.load(acc_t, at.back(), w));
      }
    acc = cx.for_range(0, kBackwardQueryBlock, 1, acc, [&](llvm::Value* r, const LoweringContext::Carried& sums) {
      std::vector<llvm::Value*> weight;
      for (int64_t v = 0; v < key_vectors; ++v) weight.push_back(lanes.load(weights, offset(cx, r, bc, v * w), w));
      llvm::Value* row = b.CreateAdd(offset(cx, clamped_row(b.CreateAdd(i0, r)), stride), c0);
      LoweringContext::Carried next;
      for (int64_t c = 0; c < n; ++c) {
        llvm::Value* xc = lanes.broadcast(xs, b.CreateAdd(row, cx.i64c(c)), x_dtype);
        for (int64_t v = 0; v < key_vectors; ++v)
          next.push_back(lanes.fma(xc, weight[static_cast<size_t>(v)], sums[next.size()]));
      }
      return next;
    });
    for (size_t k = 0; k < acc.size(); ++k) lanes.store(acc[k], acc_t, at[k], w);
  }

  void accumulate(llvm::Value* acc_t, int64_t cols, llvm::Value* xs, DType x_dtype, int64_t stride,
                  llvm::Value* weights, llvm::Value* i0) const {
    const int64_t main = cols / per_tile * per_tile;
    cx.for_range(0, main, per_tile, [&](llvm::Value* c0) {
      accumulate_columns(acc_t, c0, per_tile, xs, x_dtype, stride, weights, i0);
    });
    if (main < cols) accumulate_columns(acc_t, cx.i64c(main), cols - main, xs, x_dtype, stride, weights, i0);
  }

  // dq[rows i0 + r0 ..] += ds k for d's vectors c0 .. c0 + n.
  void query_gradient_tile(llvm::Value* i0, llvm::Value* r0, int64_t c0, int64_t n, llvm::Value* keys) const {
    auto& b = cx.b();
    const int w = cx.vector_width();
    LoweringContext::Carried acc(static_cast<size_t>(dq_per_tile * n), lanes.splat(0.0f));
    acc = cx.for_range(cx.i64c(0), keys, 1, acc, [&](llvm::Value* j, const LoweringContext::Carried& sums) {
      std::vector<llvm::Value*> k_row;
      for (int64_t c = 0; c < n; ++c)
        k_row.push_back(lanes.load(x.k, offset(cx, b.CreateAdd(k0, j), qk_stride(), (c0 + c) * w),
                                   lanes.in_vector(c0 + c, a.d), a.qkv));
      LoweringContext::Carried next;
      for (int64_t r = 0; r < dq_per_tile; ++r) {
        llvm::Value* weight = lanes.broadcast(ds, b.CreateAdd(offset(cx, b.CreateAdd(r0, cx.i64c(r)), bc), j));
        for (int64_t c = 0; c < n; ++c) next.push_back(lanes.fma(weight, k_row[static_cast<size_t>(c)], sums[next.size()]));
      }
      return next;
    });
    for (int64_t r = 0; r < dq_per_tile; ++r) {
      llvm::Value* i = b.CreateAdd(i0, b.CreateAdd(r0, cx.i64c(r)));
      cx.if_else(
          b.CreateICmpSLT(i, cx.i64c(a.t)),
          [&] {
            for (int64_t c = 0; c < n; ++c) {
              const int64_t lanes_n = lanes.in_vector(c0 + c, a.d);
              llvm::Value* at = offset(cx, i, qk_stride(), (c0 + c) * w);
              lanes.store(b.CreateFAdd(lanes.load(dq, at, lanes_n), acc[static_cast<size_t>(r * n + c)]), dq, at, lanes_n);
            }
          },
          nullptr, "dq_row");
    }
  }

  // One block of queries at i0 against the key block.
  void query_block(llvm::Value* i0, llvm::Value* keys) const {
    const int w = cx.vector_width();
    cx.for_range(0, kBackwardQueryBlock, per_tile, [&](llvm::Value* r0) { weights_tile(i0, r0); });
    accumulate(dv_t, a.dv, d_o, DType::f32, v_stride(), p, i0);
    accumulate(dk_t, a.d, x.q, a.qkv, qk_stride(), ds, i0);
    const int64_t d_vectors = (a.d + w - 1) / w;
    cx.for_range(0, kBackwardQueryBlock, dq_per_tile, [&](llvm::Value* r0) {
      for (int64_t c0 = 0; c0 < d_vectors; c0 += dq_per_tile)
        query_gradient_tile(i0, r0, c0, std::min(dq_per_tile, d_vectors - c0), keys);
    });
  }

  // dst[k0 + j, c] = acc_t[c, j] for the block's keys.
  void store_keys(llvm::Value* dst, llvm::Value* acc_t, int64_t cols, int64_t stride, llvm::Value* keys) const {
    auto& b = cx.b();
    cx.for_range(cx.i64c(0), keys, 1, [&](llvm::Value* j) {
      cx.for_range(0, cols, 1, [&](llvm::Value* c) {
        llvm::Value* v = b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), acc_t, b.CreateAdd(offset(cx, c, bc), j)));
        b.CreateStore(v, b.CreateInBoundsGEP(b.getFloatTy(), dst, b.CreateAdd(offset(cx, b.CreateAdd(k0, j), stride), c)));
      });
    });
  }
};

}  // namespace

bool takes_blocked_attention(const KernelEmitArgs& args) {
  const Shape &q = args.node.in(0).shape, &k = args.node.in(1).shape;
  const int64_t s = k[k.size() - 2];
  // Fewer query rows than a vector's lanes (a decoder step's one) leave most of
  // the blocks' query lanes idle; the row kernel reads K in place for them.
  if (q[q.size() - 2] < args.cx.vector_width()) return s > kFewRowsMaxKeys;
  return s > kRowKernelMaxKeys;
}

// A mask that varies along the keys only ([.., 1, S]: key padding, a decoder
// step's positions), whose blocks of dropped keys the forward can skip.
bool key_mask(const Problem& a) { return a.mask_t_stride == 0 && a.mask_s_stride != 0; }

// Whether the key mask keeps any of keys k0 .. k0 + kForwardKeyBlock - 1 (those below S).
llvm::Value* any_key_kept(LoweringContext& cx, const Lanes& lanes, const Problem& a, llvm::Value* mask,
                          llvm::Value* k0) {
  auto& b = cx.b();
  const int w = cx.vector_width();
  llvm::Value* kept = nullptr;
  for (int64_t v = 0; v < kForwardKeyBlock / w; ++v) {
    llvm::Value* m = mask_lanes(cx, lanes, mask, cx.i64c(0), b.CreateAdd(k0, cx.i64c(v * w)), a.s, a.mask_s_stride);
    llvm::Value* lane_kept = b.CreateFCmpUNE(m, lanes.splat(-kInfinity));
    kept = kept ? b.CreateOr(kept, lane_kept) : lane_kept;
  }
  return b.CreateOrReduce(kept);
}

void emit_blocked_attention_forward(const KernelEmitArgs& args) {
  LoweringContext& cx = args.cx;
  auto& b = cx.b();
  const int w = cx.vector_width();
  const Lanes lanes(cx);
  const Problem a = problem_of(args.node);
  // Up to 4 vectors of queries (a quarter of the tile's accumulators each), fewer
  // when T is short; a power of two, so that the tiles divide the key block.
  const auto wanted = static_cast<uint64_t>((a.t + w - 1) / w);
  const int64_t vectors = std::min<int64_t>(w >= 16 ? 4 : 2, static_cast<int64_t>(std::bit_ceil(wanted)));
  const int64_t br = vectors * w, blocks = (a.t + br - 1) / br;
  cx.parallel_for(cx.unique_name("flash_attention"), a.batch * blocks, 1, [&](llvm::Value* begin, llvm::Value* end) {
    llvm::Value* q_t = cx.stack_buffer(a.d * br, "q_t");
    llvm::Value* p = cx.stack_buffer(kForwardKeyBlock * br, "p");
    llvm::Value* o_t = cx.stack_buffer(a.dv * br, "o_t");
    llvm::Value* row_buffer = cx.stack_buffer(2 * br, "rows");
    cx.for_range(begin, end, 1, [&](llvm::Value* task) {
      llvm::Value* bh = b.CreateUDiv(task, cx.i64c(blocks));
      llvm::Value* q0 = offset(cx, balanced_block(cx, b.CreateURem(task, cx.i64c(blocks)), blocks), br);
      const Forward f{cx, lanes, a, vectors, br, accumulators(cx) / vectors, head_at(cx, args, a, bh), q0, q_t, p, o_t};
      transpose_block(cx, q_t, br, f.x.q, a.qkv, q0, a.t, a.d, a.row_stride(a.d));
      zero(cx, o_t, a.dv * br);
      LoweringContext::Carried init(static_cast<size_t>(vectors), lanes.splat(-kInfinity));
      init.resize(static_cast<size_t>(2 * vectors),
                  llvm::ConstantFP::get(llvm::FixedVectorType::get(b.getDoubleTy(), static_cast<unsigned>(w)), 0.0));
      llvm::Value* key_end = f.key_end();
      const LoweringContext::Carried state =
          cx.for_range(cx.i64c(0), key_end, kForwardKeyBlock, init, [&](llvm::Value* k0, const LoweringContext::Carried& s) {
            if (!key_mask(a)) return f.key_block(k0, key_end, s);
            // A block of keys the mask drops entirely adds nothing: a decoder
            // step's positions not yet decoded, a padded batch's tail.
            return cx.only_if(any_key_kept(cx, lanes, a, f.x.mask, k0), s, [&] { return f.key_block(k0, key_end, s); },
                              "kept_keys");
          });
      f.store_rows(state, head_matrix_ptr(cx, a.heads, args.result_ptr(0), bh, a.t, a.dv),
                   row_ptr(cx, args.result_ptr(1), bh, a.t), row_buffer);
    });
  });
}

void emit_blocked_attention_backward(const KernelEmitArgs& args) {
  LoweringContext& cx = args.cx;
  auto& b = cx.b();
  const int w = cx.vector_width();
  const Lanes lanes(cx);
  const Problem a = problem_of(args.node);
  const int64_t key_vectors = 4, bc = key_vectors * w;
  cx.parallel_for(cx.unique_name("flash_attention_backward"), a.batch, 1, [&](llvm::Value* begin, llvm::Value* end) {
    llvm::Value* k_t = cx.stack_buffer(a.d * bc, "k_t");
    llvm::Value* v_t = cx.stack_buffer(a.dv * bc, "v_t");
    llvm::Value* dk_t = cx.stack_buffer(a.d * bc, "dk_t");
    llvm::Value* dv_t = cx.stack_buffer(a.dv * bc, "dv_t");
    llvm::Value* p = cx.stack_buffer(kBackwardQueryBlock * bc, "p");
    llvm::Value* ds = cx.stack_buffer(kBackwardQueryBlock * bc, "ds");
    cx.for_range(begin, end, 1, [&](llvm::Value* bh) {
      Backward g{cx,
                 lanes,
                 a,
                 key_vectors,
                 bc,
                 accumulators(cx) / key_vectors,
                 accumulators(cx) / 4,
                 args.node.in(4).dtype,
                 head_at(cx, args, a, bh),
                 head_matrix_ptr(cx, a.heads, args.operand_ptr(4), bh, a.t, a.dv, args.node.in(4).dtype),
                 row_ptr(cx, args.operand_ptr(5), bh, a.t),
                 head_matrix_ptr(cx, a.heads, args.operand_ptr(6), bh, a.t, a.dv),
                 head_matrix_ptr(cx, a.heads, args.result_ptr(0), bh, a.t, a.d),
                 nullptr, k_t, v_t, dk_t, dv_t, p, ds};
      cx.for_range(0, a.t, 1, [&](llvm::Value* i) { zero(cx, row_ptr(cx, g.dq, i, g.qk_stride()), a.d); });
      llvm::Value* dk = head_matrix_ptr(cx, a.heads, args.result_ptr(1), bh, a.s, a.d);
      llvm::Value* dv = head_matrix_ptr(cx, a.heads, args.result_ptr(2), bh, a.s, a.dv);
      cx.for_range(0, a.s, bc, [&](llvm::Value* k0) {
        g.k0 = k0;
        llvm::Value* keys = min_i64(cx, cx.i64c(bc), b.CreateSub(cx.i64c(a.s), k0));
        transpose_block(cx, k_t, bc, g.x.k, a.qkv, k0, a.s, a.d, g.qk_stride());
        transpose_block(cx, v_t, bc, g.x.v, a.qkv, k0, a.s, a.dv, g.v_stride());
        zero(cx, dk_t, a.d * bc);
        zero(cx, dv_t, a.dv * bc);
        // With causal, query i sees key k0 from i = k0 - (S - T) on.
        llvm::Value* first = a.causal ? max_i64(cx, cx.i64c(0), b.CreateAdd(k0, cx.i64c(a.t - a.s))) : cx.i64c(0);
        cx.for_range(first, cx.i64c(a.t), kBackwardQueryBlock, [&](llvm::Value* i0) { g.query_block(i0, keys); });
        g.store_keys(dk, dk_t, a.d, g.qk_stride(), keys);
        g.store_keys(dv, dv_t, a.dv, g.v_stride(), keys);
      });
    });
  });
}

}  // namespace kiln::compiler
