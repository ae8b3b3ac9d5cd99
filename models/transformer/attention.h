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

// The same for one query at position `pos` (i32[], decoding's step) over the
// tokens so far i32[B,L] (positions after pos hold anything): f32[B,1,1,L], -inf
// after pos and at pad tokens.
Value position_padding_mask(Builder& b, Value tokens, Value pos, int32_t pad_id);

// The Linear layer prefix.{w<which>,b<which>} ("q", "k" or "v") of rows
// f32[B*L, D], split into cfg.heads heads: f32[B, H, L, D/H].
Value project_heads(Layers& l, Value rows, int64_t batch, const std::string& prefix, const std::string& which);

// softmax(Q K^T / sqrt(d_k) + mask) V of heads q f32[B,H,Lq,D/H] and k, v
// f32[B,H,Lk,D/H], the heads merged and projected by prefix.{wo,bo}; mask
// broadcasts to [B,H,Lq,Lk]. Returns rows f32[B*Lq, D]. With the Layers'
// keep_attention_weights, the weights are output attention_weights_name(prefix).
Value attend(Layers& l, Value q, Value k, Value v, Value mask, const std::string& prefix);

// "enc.0.self_attn.weights": the output that holds an attention's weights.
std::string attention_weights_name(const std::string& prefix);

// attend() over the heads projected from queries: rows f32[B*Lq, D] and
// keys_values: rows f32[B*Lk, D]. Returns rows f32[B*Lq, D].
Value multi_head_attention(Layers& l, Value queries, Value keys_values, Value mask, int64_t batch,
                           const std::string& prefix);

}  // namespace kiln::models
