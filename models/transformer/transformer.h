#pragma once
// The encoder-decoder Transformer of "Attention Is All You Need" as kiln
// graphs.
//
// All graphs of one config declare the same params (same names, types and init
// attrs), so one set of param tensors binds to every graph. Token inputs are
// i32, padding is cfg.pad_id. Params: `embed` f32[V,D] (shared by source,
// target and the pre-softmax projection),
// `enc.L.{self_attn.{wq,bq,wk,bk,wv,bv,wo,bo},ln1.{gamma,beta},
// ffn.{w1,b1,w2,b2},ln2.{gamma,beta}}` and
// `dec.L.{self_attn.*,ln1.*,cross_attn.*, ln2.*,ffn.*,ln3.*}`; state `pos_enc`
// f32[max_len,D] {init="sinusoidal"} (never trained or assigned).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "models/optimizer.h"
#include "models/transformer/config.h"

namespace kiln::models {

// Forward + label-smoothed cross-entropy (ignoring pad) + backward + Adam with
// warm-up (models/optimizer.h append_adam: state %step and moments; outputs
// "loss" then "lr"). Inputs: %src i32[B,S], %tgt_in i32[B,T] (BOS + target),
// %tgt_out i32[B,T] (target + EOS, pad after). Dropout (rate cfg.dropout) keyed
// by %step, so step k's masks are a function of (seed, k).
//
// An update's batch may be cut into parts by rows: --update-freq N runs N
// parts one after another (adam.update_freq = N), the ranks of a data-parallel
// job one each (adam.allreduce), and both multiply. A part's graph declares
// input %first_example (i32[]: its first row in the update's batch), which keys
// its dropout so that the parts draw the masks of the whole batch, and weighs
// its gradient by input %grad_weight (its share of the update's target
// tokens): the update equals the whole batch's, whatever the cut.
inline const std::string kFirstExampleInput = "first_example";
Graph build_train_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len,
                        const AdamOptions& adam);

// A part of an update that is not its rank's last with --update-freq N > 1: it
// adds its weighted gradient into state %<param>.grad_acc (optimizer.h), and
// build_train_graph (adam.update_freq = N) applies the sum and zeroes the
// accumulators.
Graph build_accumulate_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len);

// Same forward and loss (output "loss"), no optimizer; dropout off unless
// `training` (then it needs state %step as the key). Used for dev loss and
// finite differences.
Graph build_loss_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len, bool training);

// Inference, dropout off. Encoder: input %src i32[B,S] -> outputs "memory"
// f32[B,S,D] (the full decoder's input), then every decoder layer's
// cross-attention keys and values f32[B,H,S,D/H] (the decoder step graph's
// inputs, models/transformer/decoder_step.h).
Graph build_encoder_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len);

// Decoder over a whole target: inputs %memory f32[B,S,D], %src i32[B,S] (its
// padding mask), %tgt_in i32[B,T] -> output "log_probs" f32[B,T,V]
// (log_softmax of the tied pre-softmax projection). Causal, so position t's row
// depends only on tgt_in[:, :t+1]. Decoding runs the step graph
// (decoder_step.h) instead, one position at a time; tests check it against this.
Graph build_decoder_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len);

// One sentence pair, teacher-forced, dropout off: inputs %src i32[1,S] and
// %tgt_in i32[1,T] (the start token, then the output) -> every attention written
// out with its weights an output (attention.h's attention_weights_name):
// enc.L.self_attn.weights f32[1,H,S,S], dec.L.self_attn.weights f32[1,H,T,T],
// dec.L.cross_attn.weights f32[1,H,T,S], in layer order; then "log_probs"
// f32[1,T,V]. Row t is what decoding's step t computes for the same tokens
// (causal). What `kiln translate --attention` runs for each sentence; training
// and decoding keep flash_attention, which never stores the weights.
Graph build_attention_graph(const TransformerConfig& cfg, int64_t src_len, int64_t tgt_len);

// The names and types of every param (for checkpoints: they must match).
std::vector<std::pair<std::string, TensorType>> param_types(const TransformerConfig& cfg);

}  // namespace kiln::models
