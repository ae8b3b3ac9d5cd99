#pragma once
// Decoding many sentences in batches: sorted by length, grouped by the
// decoder's padded source and output lengths, and cut into batches of at most
// a number of tokens. A sentence decodes on the same padded lengths whatever
// batch it lands in (alone too), so batching changes no result.
#include <cstdint>
#include <functional>
#include <vector>

#include "models/decode/beam.h"
#include "models/decode/decoder.h"
#include "models/decode/greedy.h"

namespace kiln::models {

struct DecodeOptions {
  int beam_size = 1;            // 1: greedy; more: beam search
  double length_penalty = 0.6;  // beam search's alpha
  // The most tokens a batch holds: its decoder rows (sentences x beam_size)
  // times their padded source plus padded output length. A batch has a power
  // of two sentences, at least one.
  int64_t batch_tokens = 4096;
  int nbest = 1;  // decode_nbest: hypotheses kept per sentence (at most beam_size)
  std::function<void(size_t)> progress = {};  // if set, called after each batch with its count of sentences
};

// Decodes each source (token ids without bos/eos) with at most max_lens[i]
// generated tokens. Returns the best tokens without bos and without the final
// eos, in the order of `sources`. kiln::Error for a source without tokens.
std::vector<std::vector<int32_t>> decode_all(Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                             const std::vector<int64_t>& max_lens, const DecodeTokens& tokens,
                                             const DecodeOptions& opts);

// The same by beam search (beam_size 1 included: greedy, with scores): each
// source's up to opts.nbest best hypotheses, best first, their tokens ending
// with eos where they finished that way.
std::vector<std::vector<Hypothesis>> decode_nbest(Decoder& decoder, const std::vector<std::vector<int32_t>>& sources,
                                                  const std::vector<int64_t>& max_lens, const DecodeTokens& tokens,
                                                  const DecodeOptions& opts);

}  // namespace kiln::models
