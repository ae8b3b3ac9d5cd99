// flash_attention(q, k, v, mask) {scale, heads, causal} -> o, lse and its gradient op
// flash_attention_backward(q, k, v, mask, o, lse, do) {scale, heads, causal} -> dq, dk, dv.
//
// With causal = 1, query i sees key j only where j <= i + S - T (bottom-right
// aligned, as FlashAttention 2: j <= i when T == S), besides the mask.
//
// With heads = H > 0, q, k, v, o (and dq, dk, dv, do) are in the projections'
// layout [..., T, H*d], head h of row t at columns h*d .. h*d+d-1: the op reads
// and writes the heads in place of a head split (reshape + transpose) before it
// and a head merge after it. The scores, mask and lse are per head, [..., H, T, S].
//
// The backward recomputes each row's weights p = exp(s - lse) from q, k and the
// forward's lse (as FlashAttention does), then with D = rowsum(do * o):
//   dv = p^T do,  dp = do v^T,  ds = p * (dp - D),  dq = scale ds k,  dk = scale ds^T q.
//
// q, k and v are all f32 or all bf16 (the operands of attention's two products,
// as matmul's: --precision bf16 stores what the backward keeps at half the
// bytes), and so may the backward's o be; the sums, o, lse and the gradients
// are f32 (the gradient rule casts dq, dk, dv back to bf16 operands' dtype).
#include "ops/attention.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmanipulation.hpp>

#include "ops/elementwise.h"
#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {
namespace {

Shape leading(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

Shape with_last_two(Shape batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  return batch;
}

const char* const kRoles[] = {"q (operand 0)", "k (operand 1)", "v (operand 2)", "mask (operand 3)"};

// [..., T, H*d] -> [..., H, T, d]: a packed operand's shape per head.
Shape per_head(const Shape& packed, int64_t heads) {
  Shape s(packed.begin(), packed.end() - 2);
  s.push_back(heads);
  s.push_back(packed[packed.size() - 2]);
  s.push_back(packed.back() / heads);
  return s;
}

// [..., H, T, d] -> [..., T, H*d].
Shape packed_shape(const Shape& per_head_shape) {
  Shape s(per_head_shape.begin(), per_head_shape.end() - 3);
  const size_t r = per_head_shape.size();
  s.push_back(per_head_shape[r - 2]);
  s.push_back(per_head_shape[r - 3] * per_head_shape[r - 1]);
  return s;
}

bool causal_of(const Attrs& attrs) {
  const int64_t causal = attrs.get_int("causal");
  if (causal != 0 && causal != 1) throw Error("causal must be 0 or 1, got " + std::to_string(causal));
  return causal == 1;
}

int64_t heads_of(const Attrs& attrs) {
  const int64_t heads = attrs.get_int("heads");
  if (heads < 0) throw Error("heads must be 0 (q, k, v per head) or the number of heads, got " + std::to_string(heads));
  return heads;
}

// q, k and v as the op computes on them: per head when they are packed.
std::vector<TensorType> per_head_operands(const std::vector<TensorType>& in, int64_t heads) {
  std::vector<TensorType> out(in.begin(), in.begin() + 4);
  if (heads == 0) return out;
  for (size_t i = 0; i < 3; ++i) {
    check_min_rank(in[i], 2, kRoles[i]);
    if (in[i].shape.back() % heads != 0)
      throw Error(std::string(kRoles[i]) + " " + shape_str(in[i].shape) + " does not split into " +
                  std::to_string(heads) + " heads");
    out[i].shape = per_head(in[i].shape, heads);
  }
  return out;
}

// Checks q, k, v (per head) and the mask; returns [..., T, S], the scores' shape.
Shape scores_shape(const std::vector<TensorType>& in) {
  const char* const* roles = kRoles;
  for (size_t i = 0; i < 3; ++i) check_dtype(in[i], {DType::f32, DType::bf16}, roles[i]);
  check_dtype(in[3], kFloat, roles[3]);
  if (in[1].dtype != in[0].dtype || in[2].dtype != in[0].dtype)
    throw Error("q, k and v must be all f32 or all bf16, got " + std::string(dtype_name(in[0].dtype)) + ", " +
                std::string(dtype_name(in[1].dtype)) + " and " + std::string(dtype_name(in[2].dtype)));
  for (size_t i = 0; i < 3; ++i) check_min_rank(in[i], 2, roles[i]);
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape;
  if (leading(k) != leading(q) || leading(v) != leading(q))
    throw Error("q, k and v must have the same leading dims, got " + shape_str(q) + ", " + shape_str(k) + " and " +
                shape_str(v));
  if (k.back() != q.back())
    throw Error("k's last dim must be q's (" + std::to_string(q.back()) + "), got " + shape_str(k));
  if (v[v.size() - 2] != k[k.size() - 2])
    throw Error("v must have k's " + std::to_string(k[k.size() - 2]) + " rows, got " + shape_str(v));
  const Shape scores = with_last_two(leading(q), q[q.size() - 2], k[k.size() - 2]);
  bool fits = in[3].shape.size() <= scores.size();
  for (size_t i = 0; fits && i < in[3].shape.size(); ++i) {
    const int64_t m = in[3].shape[in[3].shape.size() - 1 - i];
    fits = m == 1 || m == scores[scores.size() - 1 - i];
  }
  if (!fits) throw Error("mask " + shape_str(in[3].shape) + " must broadcast to the scores' shape " + shape_str(scores));
  return scores;
}

std::vector<TensorType> infer_forward(const std::vector<TensorType>& in, const Attrs& attrs) {
  causal_of(attrs);
  const int64_t heads = heads_of(attrs);
  const std::vector<TensorType> x = per_head_operands(in, heads);
  const Shape scores = scores_shape(x);
  const Shape o = with_last_two(leading(scores), scores[scores.size() - 2], x[2].shape.back());
  return {{DType::f32, heads ? packed_shape(o) : o}, {DType::f32, Shape(scores.begin(), scores.end() - 1)}};
}

std::vector<TensorType> infer_backward(const std::vector<TensorType>& in, const Attrs& attrs) {
  const std::vector<TensorType> forward = infer_forward({in[0], in[1], in[2], in[3]}, attrs);
  const char* roles[] = {"o (operand 4)", "lse (operand 5)", "do (operand 6)"};
  for (size_t i = 0; i < 3; ++i) {
    TensorType want = forward[i == 1 ? 1 : 0];
    if (i == 0 && in[4].dtype == DType::bf16) want.dtype = DType::bf16;  // o may be kept in bf16
    if (!(in[4 + i] == want)) throw Error(std::string(roles[i]) + " must be " + type_str(want) + ", got " + type_str(in[4 + i]));
  }
  std::vector<TensorType> grads = {in[0], in[1], in[2]};
  for (TensorType& g : grads) g.dtype = DType::f32;
  return grads;
}

// The operands as [batch, rows, cols] arrays in double, the mask broadcast to
// the scores' shape.
struct Problem {
  size_t batch = 0, t = 0, s = 0, d = 0, dv = 0;
  int64_t heads = 0;
  double scale = 0;
  bool causal = false;
  xt::xarray<double> q, k, v, mask;
};

// a with its axes r-3 and r-2 swapped: [..., T, H, c] <-> [..., H, T, c].
xt::xarray<double> swap_rows_and_heads(const xt::xarray<double>& a) {
  std::vector<size_t> perm(a.dimension());
  std::iota(perm.begin(), perm.end(), size_t{0});
  std::swap(perm[perm.size() - 3], perm[perm.size() - 2]);
  return xt::transpose(a, perm);
}

// x as [batch, rows, cols] per head, in double: a packed x [..., T, H*c] is
// split into its heads first.
xt::xarray<double> as_3d(const Tensor& x, size_t batch, int64_t heads) {
  xt::xarray<double> a = x.dtype() == DType::bf16 ? xt::xarray<double>(xt::cast<double>(xt::cast<float>(x.bf16())))
                                                  : xt::xarray<double>(xt::cast<double>(x.f32()));
  if (heads) {
    const Shape& sh = x.shape();
    Shape split(sh.begin(), sh.end() - 1);
    split.push_back(heads);
    split.push_back(sh.back() / heads);
    a.reshape(xt_shape(split));
    a = swap_rows_and_heads(a);
  }
  const auto& sh = a.shape();
  a.reshape({batch, sh[sh.size() - 2], sh[sh.size() - 1]});
  return a;
}

// [batch, rows, cols] per head into `out`, packing the heads back when there are some.
void store_3d(Tensor& out, xt::xarray<double> a, int64_t heads) {
  if (heads) {
    a.reshape(xt_shape(per_head(out.shape(), heads)));
    a = swap_rows_and_heads(a);
  }
  a.reshape(xt_shape(out.shape()));
  store(out, xt::cast<float>(a));
}

Problem problem(const KernelArgs& k) {
  Problem p;
  p.heads = heads_of(k.attrs);
  const std::vector<TensorType> x =
      per_head_operands({k.in[0]->type(), k.in[1]->type(), k.in[2]->type(), k.in[3]->type()}, p.heads);
  const Shape& q = x[0].shape;
  const Shape scores = scores_shape(x);
  p.batch = static_cast<size_t>(numel(leading(q)));
  p.t = static_cast<size_t>(q[q.size() - 2]);
  p.s = static_cast<size_t>(scores.back());
  p.d = static_cast<size_t>(q.back());
  p.dv = static_cast<size_t>(x[2].shape.back());
  p.scale = k.attrs.get_float("scale");
  p.causal = causal_of(k.attrs);
  p.q = as_3d(*k.in[0], p.batch, p.heads);
  p.k = as_3d(*k.in[1], p.batch, p.heads);
  p.v = as_3d(*k.in[2], p.batch, p.heads);
  p.mask = xt::broadcast(xt::cast<double>(k.in[3]->f32()), xt_shape(scores));
  p.mask.reshape({p.batch, p.t, p.s});
  return p;
}

constexpr double kMinusInf = -std::numeric_limits<double>::infinity();

// Row i of batch b's scores: scale * q_i . k_j + mask_ij (-inf past the
// diagonal when causal).
std::vector<double> score_row(const Problem& p, size_t b, size_t i) {
  std::vector<double> s(p.s, kMinusInf);
  for (size_t j = 0; j < p.s; ++j) {
    if (p.causal && j + p.t > i + p.s) continue;  // j > i + (S - T)
    double dot = 0;
    for (size_t c = 0; c < p.d; ++c) dot += p.q(b, i, c) * p.k(b, j, c);
    s[j] = p.scale * dot + p.mask(b, i, j);
  }
  return s;
}

void forward_kernel(const KernelArgs& k) {
  const Problem p = problem(k);
  xt::xarray<double> o = xt::zeros<double>({p.batch, p.t, p.dv});
  xt::xarray<double> lse = xt::zeros<double>({p.batch, p.t});
  for (size_t b = 0; b < p.batch; ++b)
    for (size_t i = 0; i < p.t; ++i) {
      const std::vector<double> s = score_row(p, b, i);
      double max = kMinusInf;
      for (double x : s) max = std::max(max, x);
      if (max == kMinusInf) {  // nothing to attend to: o stays 0
        lse(b, i) = kMinusInf;
        continue;
      }
      double sum = 0;
      for (size_t j = 0; j < p.s; ++j) sum += std::exp(s[j] - max);
      for (size_t j = 0; j < p.s; ++j) {
        const double w = std::exp(s[j] - max) / sum;
        for (size_t c = 0; c < p.dv; ++c) o(b, i, c) += w * p.v(b, j, c);
      }
      lse(b, i) = max + std::log(sum);
    }
  store_3d(*k.out[0], std::move(o), p.heads);
  lse.reshape(xt_shape(k.out[1]->shape()));
  store(*k.out[1], xt::cast<float>(lse));
}

void backward_kernel(const KernelArgs& k) {
  const Problem p = problem(k);
  const xt::xarray<double> o = as_3d(*k.in[4], p.batch, p.heads), d_o = as_3d(*k.in[6], p.batch, p.heads);
  xt::xarray<double> lse = xt::cast<double>(k.in[5]->f32());
  lse.reshape({p.batch, p.t});
  xt::xarray<double> dq = xt::zeros<double>({p.batch, p.t, p.d}), dk = xt::zeros<double>({p.batch, p.s, p.d}),
                     dv = xt::zeros<double>({p.batch, p.s, p.dv});
  for (size_t b = 0; b < p.batch; ++b)
    for (size_t i = 0; i < p.t; ++i) {
      if (lse(b, i) == kMinusInf) continue;  // a row that attends to nothing passes no gradient
      const std::vector<double> s = score_row(p, b, i);
      double row_dot = 0;  // D_i
      for (size_t c = 0; c < p.dv; ++c) row_dot += d_o(b, i, c) * o(b, i, c);
      for (size_t j = 0; j < p.s; ++j) {
        const double w = std::exp(s[j] - lse(b, i));
        double dp = 0;
        for (size_t c = 0; c < p.dv; ++c) {
          dv(b, j, c) += w * d_o(b, i, c);
          dp += d_o(b, i, c) * p.v(b, j, c);
        }
        const double ds = w * (dp - row_dot) * p.scale;
        for (size_t c = 0; c < p.d; ++c) {
          dq(b, i, c) += ds * p.k(b, j, c);
          dk(b, j, c) += ds * p.q(b, i, c);
        }
      }
    }
  for (auto [index, grad] : {std::pair{0, &dq}, std::pair{1, &dk}, std::pair{2, &dv}})
    store_3d(*k.out[static_cast<size_t>(index)], std::move(*grad), p.heads);
}

std::vector<Value> forward_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  if (dy[1].valid()) throw Error("flash_attention: lse (result 1) has no gradient rule");
  if (!dy[0].valid()) return {Value(), Value(), Value(), Value()};
  std::vector<Value> d =
      b.emit("flash_attention_backward",
             {n.operands[0], n.operands[1], n.operands[2], n.operands[3], n.results[0], n.results[1], dy[0]},
             {{"scale", n.attrs.get_float("scale")},
              {"heads", n.attrs.get_int("heads")},
              {"causal", n.attrs.get_int("causal")}});
  if (const DType dtype = b.type(n.operands[0]).dtype; dtype != DType::f32)
    for (size_t i = 0; i < 3; ++i) d[i] = cast(b, d[i], dtype);
  return {d[0], d[1], d[2], Value()};
}

}  // namespace

void register_attention(OpRegistry& r) {
  r.add(OpDef{.name = "flash_attention",
              .summary = "softmax(q k^T * scale + mask) v without the scores in memory; results o, lse (row "
                         "log-sum-exp); {heads}: q, k, v, o packed [..., T, heads*d]; {causal=1}: key j > i + S - T "
                         "dropped",
              .min_operands = 4,
              .max_operands = 4,
              .attrs = {required_attr("scale", AttrKind::real), optional_attr("heads", int64_t{0}),
                        optional_attr("causal", int64_t{0})},
              .infer = infer_forward,
              .reference = forward_kernel,
              .gradient = forward_grad,
              .lowering = Lowering::reads_memory});
  r.add(OpDef{.name = "flash_attention_backward",
              .summary = "dq, dk, dv of flash_attention from q, k, v, mask, o, lse and do (weights recomputed)",
              .min_operands = 7,
              .max_operands = 7,
              .attrs = {required_attr("scale", AttrKind::real), optional_attr("heads", int64_t{0}),
                        optional_attr("causal", int64_t{0})},
              .infer = infer_backward,
              .reference = backward_kernel,
              .lowering = Lowering::reads_memory});
}

std::pair<Value, Value> flash_attention(Builder& b, Value q, Value k, Value v, Value mask, double scale,
                                        int64_t heads, bool causal) {
  const std::vector<Value> r = b.emit("flash_attention", {q, k, v, mask},
                                      {{"scale", scale}, {"heads", heads}, {"causal", int64_t{causal}}});
  return {r[0], r[1]};
}

}  // namespace kiln::ops
