#pragma once
// Small Transformer configs and token batches shared by the models tests.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/backend.h"
#include "engine/executable.h"
#include "engine/param_init.h"
#include "engine/tensor/tensor.h"
#include "models/transformer/config.h"

namespace kiln::test {

// The interpreter's backend options. A model's logic does not depend on the
// backend (the JIT matches the interpreter, tests/jit), and the interpreter
// needs no compile.
inline compiler::BackendOptions interpreter_backend() {
  compiler::BackendOptions o;
  o.backend = "interp";
  return o;
}

// The `tiny` preset with a small vocabulary, so tests run in moments.
inline models::TransformerConfig tiny_config(int64_t vocab, double dropout) {
  models::TransformerConfig cfg = models::preset_config("tiny");
  cfg.vocab = vocab;
  cfg.dropout = dropout;
  return cfg;
}

// A small architecture (vocabulary 11, one layer each side), so checkpoints are a
// few kilobytes; named after its d_model.
inline models::TransformerConfig checkpoint_config(int64_t d_model = 8) {
  models::TransformerConfig c;
  c.name = "test-" + std::to_string(d_model);
  c.vocab = 11;
  c.d_model = d_model;
  c.heads = 2;
  c.d_ff = 16;
  c.enc_layers = 1;
  c.dec_layers = 1;
  c.max_len = 16;
  return c;
}

// An i32 token tensor [rows, len] from its rows (all of length len).
inline Tensor tokens(const std::vector<std::vector<int32_t>>& rows) {
  auto a = Tensor::I32::from_shape({rows.size(), rows.at(0).size()});
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t c = 0; c < rows[r].size(); ++c) a(r, c) = rows[r].at(c);
  return Tensor(std::move(a));
}

// A batch of two pairs with padding (id 0) in the source and the target; BOS is 1.
struct TokenBatch {
  Tensor src, tgt_in, tgt_out;
};
inline TokenBatch sample_batch(int64_t len) {
  std::vector<std::vector<int32_t>> src(2), tgt_in(2), tgt_out(2);
  for (int64_t t = 0; t < len; ++t) {
    const auto v = static_cast<int32_t>(t);
    src[0].push_back(2 + (3 * v) % 13);
    src[1].push_back(t < len - 2 ? 3 + (5 * v) % 11 : 0);     // two pads at the end
    tgt_out[0].push_back(t < len - 1 ? 4 + (7 * v) % 9 : 0);  // one pad at the end
    tgt_out[1].push_back(2 + (2 * v) % 14);
  }
  for (size_t r = 0; r < 2; ++r) {
    tgt_in[r] = {1};
    tgt_in[r].insert(tgt_in[r].end(), tgt_out[r].begin(), tgt_out[r].end() - 1);
  }
  return {tokens(src), tokens(tgt_in), tokens(tgt_out)};
}

// Binds the batch to whichever of src, tgt_in and tgt_out `exe` declares.
inline void bind_batch(Executable& exe, const TokenBatch& batch) {
  for (const auto& [name, t] :
       std::map<std::string, Tensor>{{"src", batch.src}, {"tgt_in", batch.tgt_in}, {"tgt_out", batch.tgt_out}})
    if (exe.graph().find(name)) exe.bind(name, t);
}

}  // namespace kiln::test
