#pragma once
// Decoding one position at a time over cached keys and values: the decoder step
// graph, and the cross-attention keys and values the encoder graph computes for
// it once per sentence batch.
//
// The step graph, for B rows, S source positions and a cache of T positions,
// runs once per position; one compiled graph serves every position:
//   inputs  %token i32[B,1]: each row's token at this position
//           %pos i32[]: the position, in [0, T)
//           %src i32[B,S]: the source (its padding mask)
//           %dec.L.cross_attn.{keys,values} f32[B,H,S,D/H] per decoder layer L:
//             the encoder graph's outputs of the same names
//   state   %token_cache i32[B,T] and %dec.L.self_attn.{key,value}_cache
//           f32[B,H,T,D/H]: the tokens, keys and values of positions 0..pos (the
//           step writes position pos; later positions are masked, so they may
//           hold anything finite, such as an earlier batch's)
//   output  "log_probs" f32[B,V]: log-probs of the token after position pos
// The result equals row pos of the full decoder graph's log_probs for the same
// tokens, up to rounding: the token cache is there so that pad tokens among them
// are masked as keys, as the full decoder's padding mask does.
//
// The caches are state updated by `assign`, not inputs and outputs: each is
// rewritten as update_slice(cache, new, pos), which may take the cache's memory
// and copy in only position pos, so the compiler writes the assign's value
// straight into the cache (compiler/schedule/program.h) and nothing else is
// copied. As outputs, the caller would copy every cache back into its input at
// every step.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "models/transformer/config.h"
#include "models/transformer/layers.h"

namespace kiln::models {

inline const std::string kStepToken = "token", kStepPosition = "pos";

// The cross-attention inputs of the step graph, which the encoder graph
// outputs: per decoder layer, its keys then its values.
std::vector<std::string> cross_attention_names(const TransformerConfig& cfg);
// The step graph's caches (state): the token cache, then per decoder layer its
// keys then its values. Their first axis is the batch row.
std::vector<std::string> step_cache_names(const TransformerConfig& cfg);

// Outputs every decoder layer's cross-attention keys and values, projected from
// the encoder's memory rows f32[B*S, D], named as cross_attention_names().
void output_cross_attention(Layers& l, Value memory_rows, int64_t batch);

// The step graph above; dropout off. cache_len (T) <= cfg.max_len.
Graph build_decoder_step_graph(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t cache_len);

}  // namespace kiln::models
