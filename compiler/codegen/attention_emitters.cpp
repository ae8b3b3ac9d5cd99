// flash_attention and flash_attention_backward (ops/attention.h) as kernels.
//
// A parallel loop over the batch (the leading dims). Per batch, K (and, for the
// backward, V) is first transposed into a stack buffer, so that a row of scores
// is computed W keys at a time: one broadcast of q[i, c] and one FMA per vector
// of keys, with every key vector of the row in its own accumulator (the key
// count is a compile-time constant, so the vectors and their tail masks are
// unrolled). The row then lives in a stack buffer of S floats, in L1, and never
// reaches memory the caller sees: that is the whole point of the op. Hence
// only for short S (takes_blocked_attention: attention_blocked.cpp's blocks
// take longer ones, and a few query rows' fewer). The
// backward recomputes each row's weights from the forward's log-sum-exp.
// Operands packed by heads ({heads}: [..., T, H*d]) are read and written in
// place: a head's rows are H*d floats apart instead of d. q, k, v (and the
// backward's o) may be bf16 (--precision bf16 keeps them so for the backward):
// they are widened to f32 as they are loaded, and everything else is f32.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "compiler/codegen/attention_blocked.h"
#include "compiler/codegen/attention_lanes.h"
#include "compiler/codegen/blocked_sum.h"
#include "compiler/codegen/elemental.h"
#include "compiler/codegen/families.h"
#include "compiler/codegen/fast_math.h"

namespace kiln::compiler {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The problem's sizes; all compile-time constants.
struct Dims {
  Shape batch_shape, scores, mask;  // batch_shape: the leading dims, and the heads when packed
  int64_t batch = 0, t = 0, s = 0, d = 0, dv = 0;
  int64_t heads = 0;                // packed: [..., T, heads*d]; 0: [..., T, d] per head
  int64_t key_vectors = 0, sp = 0;  // ceil(s / W) and that many W: a padded row
  float scale = 0;
  bool causal = false;              // key j dropped for query i past i + s - t
  DType qkv = DType::f32;           // q's, k's and v's dtype (f32 or bf16)

  // Floats between rows of a matrix of `cols` columns per head.
  int64_t row_stride(int64_t cols) const { return heads ? heads * cols : cols; }
};

Dims dims_of(const KernelEmitArgs& args, int w) {
  const Shape& q = args.node.in(0).shape;
  Dims a;
  a.heads = args.node.attrs().get_int("heads");
  const int64_t h = a.heads ? a.heads : 1;
  a.batch_shape = Shape(q.begin(), q.end() - 2);
  if (a.heads) a.batch_shape.push_back(a.heads);
  a.batch = numel(a.batch_shape);
  a.t = q[q.size() - 2];
  a.d = q.back() / h;
  a.s = args.node.in(1).shape[q.size() - 2];
  a.dv = args.node.in(2).shape.back() / h;
  a.scores = a.batch_shape;
  a.scores.push_back(a.t);
  a.scores.push_back(a.s);
  a.mask = args.node.in(3).shape;
  a.key_vectors = (a.s + w - 1) / w;
  a.sp = a.key_vectors * w;
  a.scale = static_cast<float>(args.node.attrs().get_float("scale"));
  a.causal = args.node.attrs().get_int("causal") == 1;
  a.qkv = args.node.in(0).dtype;
  return a;
}

// The largest lane of v (maxnum: a nan lane is passed over), in log2(W) steps of
// halves: llvm.vector.reduce.fmax lowers to a chain of W dependent scalar steps,
// as costly as a row's products at these sizes.
llvm::Value* max_lanes(LoweringContext& cx, llvm::Value* v) {
  auto& b = cx.b();
  for (auto n = llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements(); n > 1; n /= 2) {
    std::vector<int> upper;
    for (unsigned l = 0; l < n / 2; ++l) upper.push_back(static_cast<int>(n / 2 + l));
    std::vector<int> lower(upper.size());
    for (size_t l = 0; l < lower.size(); ++l) lower[l] = static_cast<int>(l);
    v = b.CreateMaxNum(b.CreateShuffleVector(v, lower), b.CreateShuffleVector(v, upper));
  }
  return b.CreateExtractElement(v, uint64_t{0});
}

// dst[c * sp + j] = src[j * stride + c] for j < rows, c < cols: a [rows, cols]
// matrix of `dtype` (rows `stride` elements apart) transposed into rows of sp
// floats (the padding columns are not written).
void transpose_into(LoweringContext& cx, llvm::Value* dst, llvm::Value* src, DType dtype, int64_t rows,
                    int64_t cols, int64_t stride, int64_t sp) {
  auto& b = cx.b();
  cx.for_range(0, rows, 1, [&](llvm::Value* j) {
    cx.for_range(0, cols, 1, [&](llvm::Value* c) {
      llvm::Value* to = b.CreateInBoundsGEP(b.getFloatTy(), dst, b.CreateAdd(offset(cx, c, sp), j));
      b.CreateStore(cx.load(dtype, src, b.CreateAdd(offset(cx, j, stride), c), 1), to);
    });
  });
}

// Zeroes `rows` rows of `cols` floats, `stride` floats apart.
void zero_rows(LoweringContext& cx, llvm::Value* ptr, int64_t rows, int64_t cols, int64_t stride) {
  if (stride == cols) return zero(cx, ptr, rows * cols);
  cx.for_range(0, rows, 1, [&](llvm::Value* j) {
    zero(cx, cx.b().CreateInBoundsGEP(cx.b().getFloatTy(), ptr, offset(cx, j, stride)), cols);
  });
}

// Partial sums per accumulator so that at least 8 FMA chains run at once
// (chains of a few accumulators wait on the FMA's latency, 4 cycles): the sums
// are split over `ways` interleaved ranges of the summed index, then added.
int split_ways(int64_t accumulators, int64_t length) {
  int ways = 1;
  while (ways < 4 && accumulators * ways < 8 && 2 * ways <= length) ways *= 2;
  return ways;
}

// for i in [0, n): acc = step(i, acc), the chains split split_ways ways (index
// i into part i % ways), then summed pairwise: acc[k] = (part0 + part1) + ...
LoweringContext::Carried split_sum(
    LoweringContext& cx, int64_t n, size_t accumulators, llvm::Value* zero,
    const std::function<LoweringContext::Carried(llvm::Value*, const LoweringContext::Carried&)>& step) {
  auto& b = cx.b();
  const int ways = split_ways(static_cast<int64_t>(accumulators), n);
  const auto part_of = [&](const LoweringContext::Carried& all, int u) {
    return LoweringContext::Carried(all.begin() + static_cast<std::ptrdiff_t>(u * accumulators),
                                    all.begin() + static_cast<std::ptrdiff_t>((u + 1) * accumulators));
  };
  LoweringContext::Carried init(accumulators * static_cast<size_t>(ways), zero);
  const int64_t main = n / ways * ways;
  LoweringContext::Carried parts =
      cx.for_range(0, main, ways, init, [&](llvm::Value* i0, const LoweringContext::Carried& acc) {
        LoweringContext::Carried next;
        for (int u = 0; u < ways; ++u) {
          const LoweringContext::Carried stepped = step(b.CreateAdd(i0, cx.i64c(u)), part_of(acc, u));
          next.insert(next.end(), stepped.begin(), stepped.end());
        }
        return next;
      });
  for (int64_t i = main; i < n; ++i) {  // the tail, into the first parts
    const int u = static_cast<int>(i - main);
    const LoweringContext::Carried stepped = step(cx.i64c(i), part_of(parts, u));
    std::copy(stepped.begin(), stepped.end(), parts.begin() + static_cast<std::ptrdiff_t>(u * accumulators));
  }
  for (int width = ways; width > 1; width /= 2)
    for (int u = 0; u < width / 2; ++u)
      for (size_t k = 0; k < accumulators; ++k)
        parts[u * accumulators + k] =
            b.CreateFAdd(parts[u * accumulators + k], parts[(u + width / 2) * accumulators + k]);
  parts.resize(accumulators);
  return parts;
}

// sum over c < depth of splat(row[c]) * rows_t[c * sp + vector j]: for every key
// vector j at once (one accumulator each, split_sum's parts), with row a
// pointer to `row_dtype` and rows_t to f32.
std::vector<llvm::Value*> row_times_transposed(LoweringContext& cx, const Lanes& lanes, const Dims& a, llvm::Value* row,
                                               DType row_dtype, llvm::Value* rows_t, int64_t depth) {
  const auto vectors = static_cast<size_t>(a.key_vectors);
  return split_sum(cx, depth, vectors, lanes.splat(0.0f), [&](llvm::Value* c, const LoweringContext::Carried& acc) {
    llvm::Value* x = lanes.broadcast(row, c, row_dtype);
    LoweringContext::Carried next;
    for (size_t j = 0; j < vectors; ++j)
      next.push_back(lanes.fma(
          x, lanes.load(rows_t, offset(cx, c, a.sp, static_cast<int64_t>(j) * cx.vector_width()), cx.vector_width()),
          acc[j]));
    return next;
  });
}

// row . k for the keys of key vector j, with K's rows read in place (`stride`
// elements apart; row and k of a.qkv): W dot products over depth, their lanes summed at once. Costs
// no transpose of K, which a few query rows (a decoder step's one) would not
// repay. Keys past s read the last key (their lanes are masked later).
llvm::Value* row_times_rows(LoweringContext& cx, const Lanes& lanes, const Dims& a, llvm::Value* row, llvm::Value* k,
                            int64_t stride, int64_t j) {
  const int w = cx.vector_width();
  std::vector<llvm::Value*> keys;
  for (int l = 0; l < w; ++l)
    keys.push_back(row_ptr(cx, k, cx.i64c(std::min(j * w + l, a.s - 1)), stride, a.qkv));
  // W k's at a time, then the rest (lanes past d load as 0).
  const auto step = [&](llvm::Value* c, int64_t n, const LoweringContext::Carried& acc) {
    llvm::Value* x = lanes.load(row, c, n, a.qkv);
    LoweringContext::Carried next;
    for (int l = 0; l < w; ++l)
      next.push_back(
          lanes.fma(x, lanes.load(keys[static_cast<size_t>(l)], c, n, a.qkv), acc[static_cast<size_t>(l)]));
    return next;
  };
  const int64_t d_main = a.d / w * w;
  LoweringContext::Carried dots(static_cast<size_t>(w), lanes.splat(0.0f));
  dots = cx.for_range(0, d_main, w, dots,
                      [&](llvm::Value* c, const LoweringContext::Carried& acc) { return step(c, w, acc); });
  if (d_main < a.d) dots = step(cx.i64c(d_main), a.d - d_main, dots);
  return cx.sum_lanes(dots);
}

// Row i of one batch's scores, q_i . k_j * scale + mask_ij, as key vectors, from
// the raw products of each key vector, `raw(j)`; lanes past the keys (and, with
// causal, past the diagonal) are -inf.
// `batch_index` is the batch's multi-index. With `skip_dropped`, a key vector
// the mask drops entirely is -inf without its products (a decoder step's
// positions not yet decoded: half its cache on average).
std::vector<llvm::Value*> score_row(LoweringContext& cx, const KernelEmitArgs& args, const Lanes& lanes,
                                    const Dims& a, const std::vector<llvm::Value*>& batch_index,
                                    const std::function<llvm::Value*(int64_t)>& raw, bool skip_dropped,
                                    llvm::Value* i) {
  auto& b = cx.b();
  const int w = cx.vector_width();
  std::vector<llvm::Value*> s;
  for (int64_t j = 0; j < a.key_vectors; ++j) {
    const int64_t n = lanes.in_vector(j, a.s);
    std::vector<llvm::Value*> dims = batch_index;
    dims.push_back(i);
    dims.push_back(cx.i64c(j * w));
    const ElementIndex at = broadcast_index(cx, ElementIndex{dims, static_cast<int>(n), static_cast<int>(a.scores.size() - 1)},
                                            a.scores, a.mask);
    llvm::Value* m = args.operands[3](at);
    if (n == 1) {
      m = b.CreateInsertElement(lanes.splat(-kInf), m, uint64_t{0});
    } else if (n < w) {  // widen to W lanes, the rest -inf
      std::vector<int> pick;
      for (int l = 0; l < w; ++l) pick.push_back(l < n ? l : static_cast<int>(n));
      m = b.CreateShuffleVector(m, cx.f32c(-kInf, static_cast<int>(n)), pick);
    }
    if (a.causal) {  // key j * W + lane is dropped past i + S - T
      std::vector<llvm::Constant*> keys;
      for (int l = 0; l < w; ++l) keys.push_back(b.getInt64(static_cast<uint64_t>(j * w + l)));
      llvm::Value* last = cx.splat(b.CreateAdd(i, cx.i64c(a.s - a.t)), w);
      m = b.CreateSelect(b.CreateICmpSLE(llvm::ConstantVector::get(keys), last), m, lanes.splat(-kInf));
    }
    const auto score_of = [&] {
      llvm::Value* score = lanes.fma(raw(j), lanes.splat(a.scale), m);
      return n == w ? score : b.CreateSelect(lanes.mask(n), score, lanes.splat(-kInf));
    };
    if (!skip_dropped) {
      s.push_back(score_of());
      continue;
    }
    llvm::Value* kept = b.CreateOrReduce(b.CreateFCmpUNE(m, lanes.splat(-kInf)));
    s.push_back(cx.only_if(kept, {lanes.splat(-kInf)}, [&] { return LoweringContext::Carried{score_of()}; },
                           "scores")[0]);
  }
  return s;
}

// The per-batch pointers and multi-index inside the parallel body.
struct Batch {
  std::vector<llvm::Value*> index;
  llvm::Value *q, *k, *v;
};

llvm::Value* matrix_ptr(LoweringContext& cx, const Dims& a, llvm::Value* base, llvm::Value* bh, int64_t rows,
                        int64_t cols, DType dtype = DType::f32) {
  return head_matrix_ptr(cx, a.heads, base, bh, rows, cols, dtype);
}

Batch batch_at(LoweringContext& cx, const KernelEmitArgs& args, const Dims& a, llvm::Value* bh) {
  return {unflatten(cx, bh, a.batch_shape), matrix_ptr(cx, a, args.operand_ptr(0), bh, a.t, a.d, a.qkv),
          matrix_ptr(cx, a, args.operand_ptr(1), bh, a.s, a.d, a.qkv),
          matrix_ptr(cx, a, args.operand_ptr(2), bh, a.s, a.dv, a.qkv)};
}

void emit_forward(const KernelEmitArgs& args) {
  LoweringContext& cx = args.cx;
  auto& b = cx.b();
  const int w = cx.vector_width();
  const Lanes lanes(cx);
  const Dims a = dims_of(args, w);
  const int64_t value_vectors = (a.dv + w - 1) / w;
  const int64_t grain = LoweringContext::grain_for(a.t * a.s * (a.d + a.dv) / w);
  cx.parallel_for(cx.unique_name("flash_attention"), a.batch, grain, [&](llvm::Value* begin, llvm::Value* end) {
    // K transposed once per batch pays off over many query rows; a few (a
    // decoder step's one) take their dot products with K's rows in place.
    const bool transpose_k = a.t >= w;
    llvm::Value* k_t = transpose_k ? cx.stack_buffer(a.d * a.sp, "k_t") : nullptr;
    llvm::Value* weights = cx.stack_buffer(a.sp, "weights");
    if (transpose_k) zero(cx, k_t, a.d * a.sp);  // the padding columns stay 0
    cx.for_range(begin, end, 1, [&](llvm::Value* bh) {
      const Batch x = batch_at(cx, args, a, bh);
      llvm::Value* o = matrix_ptr(cx, a, args.result_ptr(0), bh, a.t, a.dv);
      llvm::Value* lse = row_ptr(cx, args.result_ptr(1), bh, a.t);
      if (transpose_k) transpose_into(cx, k_t, x.k, a.qkv, a.s, a.d, a.row_stride(a.d), a.sp);
      cx.for_range(0, a.t, 1, [&](llvm::Value* i) {
        llvm::Value* q_row = row_ptr(cx, x.q, i, a.row_stride(a.d), a.qkv);
        std::vector<llvm::Value*> products;
        if (transpose_k) products = row_times_transposed(cx, lanes, a, q_row, a.qkv, k_t, a.d);
        const std::vector<llvm::Value*> s = score_row(
            cx, args, lanes, a, x.index,
            [&](int64_t j) {
              return transpose_k ? products[static_cast<size_t>(j)]
                                 : row_times_rows(cx, lanes, a, q_row, x.k, a.row_stride(a.d), j);
            },
            !transpose_k, i);
        llvm::Value* max_v = s[0];
        for (size_t j = 1; j < s.size(); ++j) max_v = b.CreateMaxNum(max_v, s[j]);
        llvm::Value* max = max_lanes(cx, max_v);
        // A row with every key masked attends to nothing: weights 0, o 0, lse -inf.
        llvm::Value* empty = b.CreateFCmpOEQ(max, cx.f32c(-kInf));
        llvm::Value* shift = cx.splat(b.CreateSelect(empty, cx.f32c(0.0f), max), w);
        llvm::Value* sum_v = lanes.splat(0.0f);
        for (int64_t j = 0; j < a.key_vectors; ++j) {
          llvm::Value* e = emit_exp(cx, b.CreateFSub(s[static_cast<size_t>(j)], shift));
          lanes.store(e, weights, cx.i64c(j * w), w);
          sum_v = b.CreateFAdd(sum_v, e);
        }
        llvm::Value* total = add_lanes(cx, sum_v);
        llvm::Value* inverse = b.CreateSelect(empty, cx.f32c(0.0f), b.CreateFDiv(cx.f32c(1.0f), total));
        llvm::Value* row_lse = b.CreateSelect(empty, cx.f32c(-kInf), b.CreateFAdd(max, emit_log(cx, total)));
        b.CreateStore(row_lse, b.CreateInBoundsGEP(b.getFloatTy(), lse, i));
        // o_i = sum_j weight_j v_j / total, every value vector in its own accumulator.
        const LoweringContext::Carried acc =
            split_sum(cx, a.s, static_cast<size_t>(value_vectors), lanes.splat(0.0f),
                      [&](llvm::Value* j, const LoweringContext::Carried& sums) {
                        llvm::Value* wj = lanes.broadcast(weights, j);
                        LoweringContext::Carried next;
                        for (int64_t c = 0; c < value_vectors; ++c)
                          next.push_back(lanes.fma(wj,
                                                   lanes.load(x.v, offset(cx, j, a.row_stride(a.dv), c * w),
                                                              lanes.in_vector(c, a.dv), a.qkv),
                                                   sums[static_cast<size_t>(c)]));
                        return next;
                      });
        for (int64_t c = 0; c < value_vectors; ++c)
          lanes.store(b.CreateFMul(acc[static_cast<size_t>(c)], cx.splat(inverse, w)), o,
                      offset(cx, i, a.row_stride(a.dv), c * w), lanes.in_vector(c, a.dv));
      });
    });
  });
}

void emit_backward(const KernelEmitArgs& args) {
  LoweringContext& cx = args.cx;
  auto& b = cx.b();
  const int w = cx.vector_width();
  const Lanes lanes(cx);
  const Dims a = dims_of(args, w);
  const int64_t q_vectors = (a.d + w - 1) / w, value_vectors = (a.dv + w - 1) / w;
  const DType o_dtype = args.node.in(4).dtype;
  const int64_t grain = LoweringContext::grain_for(a.t * a.s * (a.d + a.dv) / w);
  cx.parallel_for(cx.unique_name("flash_attention_backward"), a.batch, grain, [&](llvm::Value* begin, llvm::Value* end) {
    llvm::Value* k_t = cx.stack_buffer(a.d * a.sp, "k_t");
    llvm::Value* v_t = cx.stack_buffer(a.dv * a.sp, "v_t");
    llvm::Value* weights = cx.stack_buffer(a.sp, "weights");
    llvm::Value* d_scores = cx.stack_buffer(a.sp, "d_scores");
    zero(cx, k_t, a.d * a.sp);  // the padding columns stay 0
    zero(cx, v_t, a.dv * a.sp);
    cx.for_range(begin, end, 1, [&](llvm::Value* bh) {
      const Batch x = batch_at(cx, args, a, bh);
      const int64_t qk_stride = a.row_stride(a.d), v_stride = a.row_stride(a.dv);
      llvm::Value* o = matrix_ptr(cx, a, args.operand_ptr(4), bh, a.t, a.dv, o_dtype);
      llvm::Value* lse = row_ptr(cx, args.operand_ptr(5), bh, a.t);
      llvm::Value* d_o = matrix_ptr(cx, a, args.operand_ptr(6), bh, a.t, a.dv);
      llvm::Value* dq = matrix_ptr(cx, a, args.result_ptr(0), bh, a.t, a.d);
      llvm::Value* dk = matrix_ptr(cx, a, args.result_ptr(1), bh, a.s, a.d);
      llvm::Value* dv = matrix_ptr(cx, a, args.result_ptr(2), bh, a.s, a.dv);
      zero_rows(cx, dk, a.s, a.d, qk_stride);
      zero_rows(cx, dv, a.s, a.dv, v_stride);
      transpose_into(cx, k_t, x.k, a.qkv, a.s, a.d, qk_stride, a.sp);
      transpose_into(cx, v_t, x.v, a.qkv, a.s, a.dv, v_stride, a.sp);
      cx.for_range(0, a.t, 1, [&](llvm::Value* i) {
        llvm::Value* q_row = row_ptr(cx, x.q, i, qk_stride, a.qkv);
        llvm::Value* do_row = row_ptr(cx, d_o, i, v_stride);
        const std::vector<llvm::Value*> products = row_times_transposed(cx, lanes, a, q_row, a.qkv, k_t, a.d);
        const std::vector<llvm::Value*> s = score_row(
            cx, args, lanes, a, x.index, [&](int64_t j) { return products[static_cast<size_t>(j)]; }, false, i);
        llvm::Value* row_lse = b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), lse, i));
        // A row that attended to nothing (lse -inf) has weights 0 and passes no
        // gradient: its dq row is 0 and it adds nothing to dk and dv (skipped, as
        // the reference does: 0 times a non-finite do would be nan).
        llvm::Value* empty = b.CreateFCmpOEQ(row_lse, cx.f32c(-kInf));
        cx.if_else(
            empty, [&] { zero(cx, row_ptr(cx, dq, i, qk_stride), a.d); },
            [&] {
              llvm::Value* shift = cx.splat(row_lse, w);
              // D_i = do_i . o_i
              llvm::Value* dot_v = lanes.splat(0.0f);
              for (int64_t c = 0; c < value_vectors; ++c) {
                const int64_t n = lanes.in_vector(c, a.dv);
                dot_v = lanes.fma(lanes.load(do_row, cx.i64c(c * w), n),
                                  lanes.load(o, offset(cx, i, v_stride, c * w), n, o_dtype), dot_v);
              }
              llvm::Value* row_dot = cx.splat(add_lanes(cx, dot_v), w);
              // dp_ij = do_i . v_j; ds_ij = p_ij (dp_ij - D_i) * scale
              const std::vector<llvm::Value*> dp = row_times_transposed(cx, lanes, a, do_row, DType::f32, v_t, a.dv);
              for (int64_t j = 0; j < a.key_vectors; ++j) {
                llvm::Value* p = emit_exp(cx, b.CreateFSub(s[static_cast<size_t>(j)], shift));
                lanes.store(p, weights, cx.i64c(j * w), w);
                llvm::Value* ds = b.CreateFMul(b.CreateFMul(p, b.CreateFSub(dp[static_cast<size_t>(j)], row_dot)),
                                               lanes.splat(a.scale));
                lanes.store(ds, d_scores, cx.i64c(j * w), w);
              }
              // dq_i = sum_j ds_ij k_j; dk_j += ds_ij q_i; dv_j += p_ij do_i
              std::vector<llvm::Value*> q_v, do_v;
              for (int64_t c = 0; c < q_vectors; ++c)
                q_v.push_back(lanes.load(q_row, cx.i64c(c * w), lanes.in_vector(c, a.d), a.qkv));
              for (int64_t c = 0; c < value_vectors; ++c)
                do_v.push_back(lanes.load(do_row, cx.i64c(c * w), lanes.in_vector(c, a.dv)));
              LoweringContext::Carried init(static_cast<size_t>(q_vectors), lanes.splat(0.0f));
              const LoweringContext::Carried dq_acc =
                  cx.for_range(0, a.s, 1, init, [&](llvm::Value* j, const LoweringContext::Carried& sums) {
                    llvm::Value* ds = lanes.broadcast(d_scores, j);
                    llvm::Value* p = lanes.broadcast(weights, j);
                    LoweringContext::Carried next;
                    for (int64_t c = 0; c < q_vectors; ++c) {
                      const int64_t n = lanes.in_vector(c, a.d);
                      llvm::Value* at_j = offset(cx, j, qk_stride, c * w);
                      next.push_back(lanes.fma(ds, lanes.load(x.k, at_j, n, a.qkv), sums[static_cast<size_t>(c)]));
                      lanes.store(lanes.fma(ds, q_v[static_cast<size_t>(c)], lanes.load(dk, at_j, n)), dk, at_j, n);
                    }
                    for (int64_t c = 0; c < value_vectors; ++c) {
                      const int64_t n = lanes.in_vector(c, a.dv);
                      llvm::Value* at_j = offset(cx, j, v_stride, c * w);
                      lanes.store(lanes.fma(p, do_v[static_cast<size_t>(c)], lanes.load(dv, at_j, n)), dv, at_j, n);
                    }
                    return next;
                  });
              for (int64_t c = 0; c < q_vectors; ++c)
                lanes.store(dq_acc[static_cast<size_t>(c)], dq, offset(cx, i, qk_stride, c * w),
                            lanes.in_vector(c, a.d));
            },
            "empty_row");
      });
    });
  });
}

}  // namespace

void register_attention_emitters(EmitterRegistry& r) {
  r.add_kernel(
      "flash_attention",
      [](const KernelEmitArgs& args) {
        takes_blocked_attention(args) ? emit_blocked_attention_forward(args) : emit_forward(args);
      },
      KernelReads::memory);
  r.add_kernel(
      "flash_attention_backward",
      [](const KernelEmitArgs& args) {
        takes_blocked_attention(args) ? emit_blocked_attention_backward(args) : emit_backward(args);
      },
      KernelReads::memory);
}

}  // namespace kiln::compiler
