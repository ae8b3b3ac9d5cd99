#pragma once
// Scaled dot-product attention as one op (f32), the way a flash-attention kernel
// computes it: each row of scores lives only inside the kernel, never in memory.
#include <utility>

#include "engine/ir/builder.h"

namespace kiln::ops {

// o = softmax(q k^T * scale + mask) v per batch, with q [..., T, d], k [..., S, d],
// v [..., S, dv] (the same leading dims) and an additive f32 mask that broadcasts
// to [..., T, S] (0 to keep, -inf to drop). Returns o [..., T, dv] and each row's
// log-sum-exp lse [..., T] of the masked, scaled scores, which the gradient uses
// to recompute the weights instead of keeping them. A row with every score
// masked attends to nothing: its o is 0 (not nan) and its lse is -inf.
// The mask gets no gradient; nor does lse (taking one is an error).
// With heads = H > 0, q, k, v and o are packed as the projections make them,
// [..., T, H*d] (head h at columns h*d ..), instead of [..., H, T, d]: no head
// split or merge copies them; the mask broadcasts to and lse is [..., H, T, S]
// and [..., H, T]. With causal, query i (of T) also drops key j (of S) where
// j > i + S - T (bottom-right aligned: j > i when T == S), so a causal model
// needs no [T, S] mask (pass a scalar 0 fill).
std::pair<Value, Value> flash_attention(Builder& b, Value q, Value k, Value v, Value mask, double scale,
                                        int64_t heads = 0, bool causal = false);

}  // namespace kiln::ops
