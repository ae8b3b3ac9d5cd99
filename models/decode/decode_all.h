#pragma once
// Decoding many sentences: greedy in batches of similar length, or beam search.
#include <cstdint>
#include <vector>

#include "models/decode/beam.h"
#include "models/decode/decoder.h"
#include "models/decode/greedy.h"

namespace kiln::models {

struct DecodeOptions {
  int beam_size = 1;            // 1: greedy, batched; more: beam search, one sentence at a time
  double length_penalty = 0.6;  // beam search's alpha
  int64_t batch = 32;           // rows per greedy batch
};

// Decodes each source (token ids without bos/eos) with at most max_lens[i]
// generated tokens. Sources are grouped by length and padded to the decoder's
// padded lengths, so few shapes get compiled. Returns the tokens without bos
// and without the final eos, in the order of `sources`.
std::vector<std::vector<int32_t>> decode_all(Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                             const std::vector<int64_t>& max_lens, const DecodeTokens& tokens,
                                             const DecodeOptions& opts);

}  // namespace kiln::models
