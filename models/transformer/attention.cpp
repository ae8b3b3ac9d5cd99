#include "models/transformer/attention.h"

#include <cmath>
#include <limits>

#include "ops/attention.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/shape_ops.h"

namespace kiln::models {
namespace {

// rows f32[B*L, D] -> f32[B, H, L, D/H]
Value split_heads(Layers& l, Value rows, int64_t batch) {
  Builder& b = l.builder();
  const int64_t d = l.config().d_model, heads = l.config().heads;
  const int64_t len = b.type(rows).shape.at(0) / batch;
  return ops::transpose(b, ops::reshape(b, rows, {batch, len, heads, d / heads}), {0, 2, 1, 3});
}

// f32[B, H, L, D/H] -> rows f32[B*L, D]
Value merge_heads(Layers& l, Value x) {
  Builder& b = l.builder();
  const Shape& s = b.type(x).shape;
  return ops::reshape(b, ops::transpose(b, x, {0, 2, 1, 3}), {s[0] * s[2], s[1] * s[3]});
}

// -inf where cond (bool), 0 elsewhere.
Value minus_inf_where(Builder& b, Value cond) {
  return ops::select(b, cond, ops::fill(b, {}, -std::numeric_limits<double>::infinity()), ops::fill(b, {}, 0.0));
}

}  // namespace

std::string attention_weights_name(const std::string& prefix) { return prefix + ".weights"; }

Value padding_mask(Builder& b, Value tokens, int32_t pad_id) {
  const Shape& s = b.type(tokens).shape;
  const Value is_pad = ops::equal(b, tokens, ops::fill(b, {}, pad_id, DType::i32));
  return ops::reshape(b, minus_inf_where(b, is_pad), {s.at(0), 1, 1, s.at(1)});
}

Value causal_padding_mask(Builder& b, Value tokens, int32_t pad_id) {
  const int64_t len = b.type(tokens).shape.at(1);
  return ops::add(b, padding_mask(b, tokens, pad_id), ops::causal_mask(b, len));
}

Value position_padding_mask(Builder& b, Value tokens, Value pos, int32_t pad_id) {
  const int64_t len = b.type(tokens).shape.at(1);
  const Value future = minus_inf_where(b, ops::greater(b, ops::iota(b, {len}), pos));
  return ops::add(b, padding_mask(b, tokens, pad_id), future);
}

Value project_heads(Layers& l, Value rows, int64_t batch, const std::string& prefix, const std::string& which) {
  return split_heads(l, l.linear(rows, prefix, "w" + which, "b" + which), batch);
}

Value attend(Layers& l, Value q, Value k, Value v, Value mask, const std::string& prefix) {
  Builder& b = l.builder();
  const double d_k = static_cast<double>(l.config().d_model / l.config().heads);
  const double scale = 1.0 / std::sqrt(d_k);
  if (l.keeps_attention_weights()) {
    const Value scores = ops::add(b, ops::mul(b, ops::matmul(b, q, k, false, true), l.scalar(scale)), mask);
    const Value weights = ops::softmax(b, scores);
    b.graph().rename(weights, attention_weights_name(prefix));
    b.output(weights);
    return l.linear(merge_heads(l, ops::matmul(b, weights, v)), prefix, "wo", "bo");
  }
  // softmax(q k^T / sqrt(d_k) + mask) v as one op: the scores never reach memory,
  // and the backward recomputes them from the rows' log-sum-exp.
  const Value context = ops::flash_attention(b, q, k, v, mask, scale).first;
  return l.linear(merge_heads(l, context), prefix, "wo", "bo");
}

Value multi_head_attention(Layers& l, Value queries, Value keys_values, Value mask, int64_t batch,
                           const std::string& prefix) {
  const Value q = project_heads(l, queries, batch, prefix, "q");
  const Value k = project_heads(l, keys_values, batch, prefix, "k");
  const Value v = project_heads(l, keys_values, batch, prefix, "v");
  return attend(l, q, k, v, mask, prefix);
}

}  // namespace kiln::models
