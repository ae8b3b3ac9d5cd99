#pragma once
// cross_entropy: mean softmax cross-entropy with label smoothing and ignored positions;
// linear_cross_entropy: the same loss of the logits h w^T, which it never stores.
#include <cstdint>
#include <utility>

#include "engine/ir/builder.h"

namespace kiln::ops {

// logits f32[..., V], labels i32[...] (logits' shape without the last axis) -> f32[].
// Per position, with lp = log_softmax(logits) and s = smoothing:
//   loss = -(1 - s) * lp[label] - s / V * sum_v lp[v]
// Positions whose label is ignore_index count for nothing; the result is the mean
// over the other positions (0 if there are none). Any other label outside [0, V)
// is a run-time kiln::Error.
Value cross_entropy(Builder& b, Value logits, Value labels, double smoothing = 0.0, int64_t ignore_index = -100);

// cross_entropy(matmul(h, w) {transpose_b}, labels): h f32[N, D], w f32[V, D]
// (an output projection, e.g. tied embeddings), labels i32[N]. Results: the loss
// f32[] and each row's log-sum-exp f32[N], which the gradient op
// linear_cross_entropy_backward reads to recompute the logits' softmax block by
// block: the [N, V] logits are never in memory, forward or backward (Apple's Cut
// Cross-Entropy, Liger Kernel's fused linear cross-entropy).
std::pair<Value, Value> linear_cross_entropy(Builder& b, Value h, Value w, Value labels, double smoothing = 0.0,
                                             int64_t ignore_index = -100);

}  // namespace kiln::ops
