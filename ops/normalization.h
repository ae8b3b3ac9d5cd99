#pragma once
// Builder helpers for the normalizations (f32).
#include <cstdint>

#include "engine/ir/builder.h"

namespace kiln::ops {

// exp(x) / sum(exp(x)) along `axis`, computed stably (the max is subtracted first).
Value softmax(Builder& b, Value x, int64_t axis = -1);
// x - log(sum(exp(x))) along `axis`, computed stably; -inf entries stay -inf.
Value log_softmax(Builder& b, Value x, int64_t axis = -1);
// (x - mean) / sqrt(var + eps) * gamma + beta over the last axis (biased variance);
// gamma and beta are f32[D] with D the last dim of x. The op also returns each
// row's mean and rstd = 1 / sqrt(var + eps) (x's shape without the last axis),
// which its gradient reuses; this returns y only.
Value layer_norm(Builder& b, Value x, Value gamma, Value beta, double eps = 1e-5);

}  // namespace kiln::ops
