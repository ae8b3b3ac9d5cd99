#pragma once
// The inference side of a trained Transformer: its encoder and decoder graphs
// compiled per shape (models/train/executable_cache.h), all bound to one set of
// params. Greedy and beam search drive it.
#include <map>
#include <string>

#include "compiler/backend.h"
#include "engine/tensor/tensor.h"
#include "models/train/executable_cache.h"
#include "models/transformer/config.h"

namespace kiln::models {

class Decoder {
 public:
  // `params`: every param of the config (param_types); extra tensors (optimizer
  // state) are ignored, a missing or mistyped param is a kiln::Error naming it.
  Decoder(TransformerConfig config, const std::map<std::string, Tensor>& params, compiler::BackendOptions exec,
          ExecutableCache::CompileObserver on_compile = {});

  const TransformerConfig& config() const { return config_; }
  // New values of the params (a trainer's latest), same checks; compiled shapes
  // stay.
  void set_params(const std::map<std::string, Tensor>& params);

  // Encoder output f32[B,S,D] for src i32[B,S] (padding = config().pad_id).
  Tensor encode(const Tensor& src);
  // log_probs f32[B,T,V] of the tied output projection for tgt_in i32[B,T];
  // row t depends only on tgt_in[:, :t+1] (causal).
  Tensor log_probs(const Tensor& memory, const Tensor& src, const Tensor& tgt_in);

  // The length to pad `len` source tokens or decoder positions to: the next
  // power of two, at least 8 and at most config().max_len (or len if longer), so
  // decoding compiles only a few shapes.
  int64_t padded_length(int64_t len) const;

 private:
  TransformerConfig config_;
  compiler::BackendOptions exec_;  // with the workspace the encoders and decoders share
  ExecutableCache encoders_, decoders_;
};

}  // namespace kiln::models
