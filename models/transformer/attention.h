#pragma once
// Multi-head scaled dot-product attention and its additive -inf masks.
#include <string>

#include "models/transformer/layers.h"

namespace kiln::models {

// The key-padding mask f32[B,1,1,L] of tokens i32[B,L]: -inf where the token is
// pad_id, 0 elsewhere (broadcast over heads and queries).
Value padding_mask(Builder& b, Value tokens, int32_t pad_id);

// Decoder self-attention's mask f32[B,1,L,L]: the causal mask (-inf above the
// diagonal) plus the key-padding mask of tokens i32[B,L].
Value causal_padding_mask(Builder& b, Value tokens, int32_t pad_id);

// softmax(Q K^T / sqrt(d_k) + mask) V over cfg.heads heads, with Q, K, V and the
// output projection Linear layers prefix.{wq,bq,wk,bk,wv,bv,wo,bo}.
// queries: rows f32[B*Lq, D]; keys_values: rows f32[B*Lk, D]; mask broadcasts to
// [B, H, Lq, Lk]. Returns rows f32[B*Lq, D].
Value multi_head_attention(Layers& l, Value queries, Value keys_values, Value mask, int64_t batch,
                           const std::string& prefix);

}  // namespace kiln::models
