#pragma once
// cross_entropy: mean softmax cross-entropy with label smoothing and ignored positions.
#include <cstdint>

#include "engine/ir/builder.h"

namespace kiln::ops {

// logits f32[..., V], labels i32[...] (logits' shape without the last axis) -> f32[].
// Per position, with lp = log_softmax(logits) and s = smoothing:
//   loss = -(1 - s) * lp[label] - s / V * sum_v lp[v]
// Positions whose label is ignore_index count for nothing; the result is the mean
// over the other positions (0 if there are none). Any other label outside [0, V)
// is a run-time kiln::Error.
Value cross_entropy(Builder& b, Value logits, Value labels, double smoothing = 0.0, int64_t ignore_index = -100);

}  // namespace kiln::ops
