// Batched decoding gives each sentence exactly what decoding it alone gives:
// greedy and beam search (tokens, log-probs and scores, bit for bit) over a
// small model trained a few dozen steps on the copy task, with sentences of
// several lengths and eos set to a token the model does produce, so
// hypotheses finish at different steps.
#include <doctest/doctest.h>

#include <sstream>

#include "cli/temp_dir.h"
#include "engine/ir/error.h"
#include "interpreter_run.h"
#include "models/checkpoint.h"
#include "models/decode/beam.h"
#include "models/decode/decode_all.h"
#include "models/decode/decoder.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::interpreter_backend;

namespace {

// 40 steps on the interpreter: past uniform outputs, far from certain ones.
const Checkpoint& trained_copy_model() {
  static TempDir dir;
  static const Checkpoint checkpoint = [] {
    std::ostringstream log;
    TrainOptions o = test::interpreter_run(dir.file("ckpt"), 40, log);
    o.eval_sentences = 4;  // the end-of-run evaluation: kept small
    train(o);
    return load_checkpoint(o.checkpoint_dir);
  }();
  return checkpoint;
}

// Copy-task sentences (start token 1, then tokens 2..10) of 3 to 21 tokens:
// three padded source lengths (8, 16, 32), unsorted.
std::vector<std::vector<int32_t>> sources() {
  std::vector<std::vector<int32_t>> out;
  for (int len : {10, 3, 17, 8, 12, 21, 5, 9, 16, 4, 11, 7}) {
    std::vector<int32_t> s{1};
    for (int i = 1; i < len; ++i) s.push_back(2 + (len * 7 + i * 3) % 9);
    out.push_back(s);
  }
  return out;
}

std::vector<int64_t> limits(const std::vector<std::vector<int32_t>>& srcs) {
  std::vector<int64_t> out;
  for (const auto& s : srcs) out.push_back(static_cast<int64_t>(s.size()) + 2);
  return out;
}

// Token 5 ends a hypothesis: copied sources hold it, so hypotheses finish at
// different lengths and some run to their limit.
const DecodeTokens kTokens{1, 5, {0}};

// src i32[1, S] padded as batched decoding pads it.
Tensor alone(const Decoder& decoder, const std::vector<int32_t>& src) {
  Tensor::I32 a =
      Tensor::I32::from_shape({1, static_cast<size_t>(decoder.padded_length(static_cast<int64_t>(src.size())))});
  a.fill(decoder.config().pad_id);
  std::copy(src.begin(), src.end(), a.begin());
  return Tensor(std::move(a));
}

}  // namespace

TEST_CASE("batched beam search gives each sentence the hypotheses and scores beam_search gives it alone") {
  const Checkpoint& c = trained_copy_model();
  Decoder decoder(c.config, c.tensors, interpreter_backend());
  const auto srcs = sources();
  const auto lens = limits(srcs);
  bool finished_early = false;
  for (const BeamOptions beam : {BeamOptions{4, 0.6}, BeamOptions{3, 1.0}}) {
    CAPTURE(beam.beam_size);
    // One batch per padded length, and batches of a few sentences.
    for (int64_t batch_tokens : {100000, 200}) {
      CAPTURE(batch_tokens);
      const auto batched = decode_nbest(decoder, srcs, lens, kTokens,
                                        {beam.beam_size, beam.length_penalty, batch_tokens, beam.beam_size});
      REQUIRE(batched.size() == srcs.size());
      for (size_t i = 0; i < srcs.size(); ++i) {
        CAPTURE(i);
        const auto one = beam_search(decoder, alone(decoder, srcs[i]), lens[i], kTokens, beam);
        REQUIRE(batched[i].size() == one.size());
        for (size_t h = 0; h < one.size(); ++h) {
          CHECK(batched[i][h].tokens == one[h].tokens);
          CHECK(batched[i][h].log_prob == one[h].log_prob);  // bit for bit
          CHECK(batched[i][h].score == one[h].score);
          finished_early |= static_cast<int64_t>(one[h].tokens.size()) < lens[i];
        }
      }
    }
  }
  CHECK(finished_early);  // the eos stopping rule was exercised
}

TEST_CASE("batched greedy decoding gives each sentence what decoding it alone gives") {
  const Checkpoint& c = trained_copy_model();
  Decoder decoder(c.config, c.tensors, interpreter_backend());
  const auto srcs = sources();
  const auto lens = limits(srcs);
  for (int64_t batch_tokens : {100000, 200}) {
    const auto batched = decode_all(decoder, srcs, lens, kTokens, {1, 0.6, batch_tokens});
    for (size_t i = 0; i < srcs.size(); ++i) {
      CAPTURE(i);
      auto one = greedy_decode(decoder, alone(decoder, srcs[i]), {lens[i]}, kTokens).front();
      if (!one.empty() && one.back() == kTokens.eos) one.pop_back();
      CHECK(batched[i] == one);
      // Beam search of size 1, batched too, is greedy decoding.
      const auto beam1 = decode_nbest(decoder, {srcs[i]}, {lens[i]}, kTokens, {1, 0.6, batch_tokens, 1});
      REQUIRE(beam1[0].size() == 1);
      auto tokens = beam1[0][0].tokens;
      if (!tokens.empty() && tokens.back() == kTokens.eos) tokens.pop_back();
      CHECK(tokens == one);
    }
  }
}

TEST_CASE("n-best lists come best first, each the head of a longer one") {
  const Checkpoint& c = trained_copy_model();
  Decoder decoder(c.config, c.tensors, interpreter_backend());
  const auto srcs = sources();
  const auto lens = limits(srcs);
  const auto four = decode_nbest(decoder, srcs, lens, kTokens, {4, 0.6, 4096, 4});
  const auto two = decode_nbest(decoder, srcs, lens, kTokens, {4, 0.6, 4096, 2});
  const auto best = decode_all(decoder, srcs, lens, kTokens, {4, 0.6, 4096});
  for (size_t i = 0; i < srcs.size(); ++i) {
    CAPTURE(i);
    REQUIRE(four[i].size() == 4);
    REQUIRE(two[i].size() == 2);
    for (size_t h = 1; h < four[i].size(); ++h) CHECK(four[i][h - 1].score >= four[i][h].score);
    for (size_t h = 0; h < two[i].size(); ++h) CHECK(two[i][h].tokens == four[i][h].tokens);
    auto top = four[i][0].tokens;
    if (top.back() == kTokens.eos) top.pop_back();
    CHECK(best[i] == top);
  }
  CHECK_THROWS_WITH_AS(decode_nbest(decoder, srcs, lens, kTokens, {2, 0.6, 4096, 3}),
                       "decode: --nbest 3 must be from 1 to the beam size 2", Error);
}
