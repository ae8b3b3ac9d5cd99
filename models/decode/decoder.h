#pragma once
// The inference side of a trained Transformer, decoding with a key/value cache:
// per sentence batch, the encoder graph runs once (its memory's
// cross-attention keys and values), then the decoder step graph
// (models/transformer/decoder_step.h) once per position, attending to the
// keys and values its caches hold for earlier positions. Both are compiled per
// shape (models/run/executable_cache.h), all bound to one set of params; one
// step graph serves every position of a batch. Greedy and beam search drive it.
#include <map>
#include <string>

#include "compiler/backend.h"
#include "engine/tensor/tensor.h"
#include "models/decode/step_decoder.h"
#include "models/run/executable_cache.h"
#include "models/transformer/config.h"

namespace kiln::models {

class Decoder final : public StepDecoder {
 public:
  // `params`: every param of the config (param_types); extra tensors (optimizer
  // state) are ignored, a missing or mistyped param is a kiln::Error naming it.
  Decoder(TransformerConfig config, const std::map<std::string, Tensor>& params, compiler::BackendOptions exec,
          ExecutableCache::CompileObserver on_compile = {});

  const TransformerConfig& config() const { return config_; }
  // New values of the params (a trainer's latest), same checks; compiled shapes
  // stay. Ends the current batch (start() again).
  void set_params(const std::map<std::string, Tensor>& params);

  // StepDecoder. The caches hold padded_length(steps) positions; reorder()
  // copies only those decoded so far. step() past them, step() before start(),
  // or a wrong number of tokens or parents is a kiln::Error.
  void start(const Tensor& src, int64_t copies, int64_t steps) override;
  const Tensor& step(const std::vector<int32_t>& tokens) override;
  void reorder(const std::vector<int32_t>& parents) override;

  // The length to pad `len` source tokens or decoder positions to: the next
  // power of two, at least 8 and at most config().max_len (or len if longer), so
  // decoding compiles only a few shapes.
  int64_t padded_length(int64_t len) const;

 private:
  TransformerConfig config_;
  compiler::BackendOptions exec_;  // with the workspace the encoders and steps share
  ExecutableCache encoders_, steps_;
  // The current batch: its step executable (caches bound), rows, positions
  // done, and the caches' length.
  Executable* step_ = nullptr;
  int64_t rows_ = 0, position_ = 0, cache_len_ = 0;
  std::vector<int32_t> source_of_;  // each row's source row (of src)
  // reorder() writes each cache into its spare and swaps them.
  std::map<std::string, Tensor> spare_caches_;
};

}  // namespace kiln::models
