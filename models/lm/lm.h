#pragma once
// The decoder-only language model (GPT's shape) as kiln graphs.
//
// Tokens are i32 ids in [0, vocab). Params: `embed` f32[V,D] (the input
// embeddings and, tied, the output projection), `pos_embed` f32[context,D] with
// learned positions, and per layer L `h.L.ln1.{gamma,beta}`,
// `h.L.attn.{wq,bq,wk,bk,wv,bv,wo,bo}`, `h.L.ln2.*`, `h.L.mlp.{w1,b1,w2,b2}`;
// pre-norm adds the final `ln_f.*`. Sinusoidal positions are state `pos_enc`
// f32[max_len,D], rotary ones state `rope` f32[max_len,D/H] (both
// {init="sinusoidal"}, never trained). Every graph of a config declares the
// same params, so one set of tensors binds to all of them.
//
// Attention is flash_attention with {causal=1} on the projections' packed
// layout [B, T, H*d]: no [T, T] buffer exists at any length, and the kernel
// skips the masked half.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "models/lm/config.h"
#include "models/optimizer.h"

namespace kiln::models {

// Forward, the mean next-token cross-entropy over every position, backward and
// Adam with warm-up (optimizer.h: outputs "loss" then "lr"). Input %tokens
// i32[B, T+1]: position t is trained to predict t+1. Dropout keyed by %step.
Graph build_lm_train_graph(const LmConfig& cfg, int64_t batch, int64_t len, const AdamOptions& adam);

// The same forward and loss (output "loss"), no optimizer, dropout off: the dev loss.
Graph build_lm_loss_graph(const LmConfig& cfg, int64_t batch, int64_t len);

// Input %tokens i32[B, T] -> output "log_probs" f32[B, T, V] of each next
// token, dropout off (tests check the KV-cached step against it).
Graph build_lm_logits_graph(const LmConfig& cfg, int64_t batch, int64_t len);

// Generation one position at a time over cached keys and values, one compiled
// graph for every position: inputs %token i32[B,1] and %pos i32[] (in
// [0, cache_len)); state h.L.attn.{key,value}_cache f32[B, cache_len, D]
// (positions after pos are masked, so they may hold anything finite); output
// "log_probs" f32[B, V] of the token after position pos. Equal to row pos of
// build_lm_logits_graph's for the same tokens, up to rounding. cache_len <= max_len.
Graph build_lm_step_graph(const LmConfig& cfg, int64_t batch, int64_t cache_len);
// The step graph's caches, per layer its keys then its values.
std::vector<std::string> lm_cache_names(const LmConfig& cfg);

// The names and types of every param, in declaration order (checkpoints must match).
std::vector<std::pair<std::string, TensorType>> lm_param_types(const LmConfig& cfg);

}  // namespace kiln::models
