// Greedy and beam search over a small untrained Transformer (its embeddings scaled
// up so each step's distribution has a clear winner), and the executable cache
// they run on.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/param_init.h"
#include "models/decode/beam.h"
#include "models/decode/decode_all.h"
#include "models/decode/decoder.h"
#include "models/decode/greedy.h"
#include "models/transformer/transformer.h"
#include "sequence_log_prob.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::kBos;
using kiln::test::kEos;
using kiln::test::interpreter_backend;

namespace {

TransformerConfig small_config() {
  TransformerConfig cfg = preset_config("tiny");
  cfg.vocab = 12;
  cfg.d_model = 32, cfg.heads = 2, cfg.d_ff = 64, cfg.enc_layers = 1, cfg.dec_layers = 1;
  cfg.max_len = 64;
  cfg.dropout = 0;
  return cfg;
}

std::map<std::string, Tensor> peaked_params(const TransformerConfig& cfg) {
  std::map<std::string, Tensor> params;
  const Graph g = build_loss_graph(cfg, 1, 1, 1, false);
  for (Value v : g.declarations(ValueKind::param)) params.emplace(g.name_of(v), initial_value(g.value(v), 7));
  params.at("embed").f32() *= 20.0f;  // peaked output distributions
  return params;
}

Tensor row(const std::vector<int32_t>& ids, int64_t len) {
  Tensor::I32 a = Tensor::I32::from_shape({1, static_cast<size_t>(len)});
  a.fill(0);
  std::copy(ids.begin(), ids.end(), a.begin());
  return Tensor(std::move(a));
}

const std::vector<std::vector<int32_t>> kSentences = {
    {4, 5, 6, 7, 8}, {9, 10, 11, 4, 5}, {2, 6, 2, 6, 2}, {11, 10, 9, 8, 7}};

}  // namespace

TEST_CASE("beam search of size 1 is greedy decoding") {
  Decoder decoder(small_config(), peaked_params(small_config()), interpreter_backend());
  for (const auto& src : kSentences) {
    const Tensor s = row(src, 8);
    const auto greedy = greedy_decode(decoder, s, {9}, {kBos, kEos});
    const auto beam = beam_search(decoder, s, 9, {kBos, kEos}, {1, 0.0});
    REQUIRE(beam.size() == 1);
    CHECK(beam[0].tokens == greedy[0]);
  }
}

TEST_CASE("beam hypotheses come best first and score their log-prob over the length penalty") {
  Decoder decoder(small_config(), peaked_params(small_config()), interpreter_backend());
  for (const auto& src : kSentences) {
    const Tensor s = row(src, 8);
    const auto hyps = beam_search(decoder, s, 9, {kBos, kEos}, {4, 0.6});
    REQUIRE(hyps.size() == 4);
    for (size_t i = 0; i < hyps.size(); ++i) {
      const Hypothesis& h = hyps[i];
      if (i > 0) CHECK(hyps[i - 1].score >= h.score);
      CHECK(h.tokens.size() <= 9);
      const bool finished_by_eos = h.tokens.back() == kEos;
      CHECK((finished_by_eos || h.tokens.size() == 9));
      CHECK(h.score == doctest::Approx(h.log_prob / length_penalty(static_cast<int64_t>(h.tokens.size()), 0.6)));
      // Recomputed with the sentence alone (batch 1, not the beam's batch of 4
      // with its caches reordered).
      CHECK(test::sequence_log_prob(decoder, s, h.tokens, kBos) == doctest::Approx(h.log_prob).epsilon(1e-4));
    }
  }
}

TEST_CASE("the length penalty is GNMT's") {
  CHECK(length_penalty(5, 0.0) == 1.0);
  CHECK(length_penalty(1, 1.0) == 1.0);
  CHECK(length_penalty(7, 1.0) == doctest::Approx(2.0));
  CHECK(length_penalty(19, 0.5) == doctest::Approx(2.0));
}

TEST_CASE("greedy decoding stops at eos and at each row's limit") {
  Decoder decoder(small_config(), peaked_params(small_config()), interpreter_backend());
  Tensor::I32 src = Tensor::I32::from_shape({3, 8});
  src.fill(0);
  for (size_t r = 0; r < 3; ++r)
    for (size_t i = 0; i < kSentences[r].size(); ++i) src(r, i) = kSentences[r][i];
  const std::vector<int64_t> limits{0, 3, 20};
  const auto out = greedy_decode(decoder, Tensor(src), limits, {kBos, kEos});
  REQUIRE(out.size() == 3);
  CHECK(out[0].empty());
  for (size_t r = 1; r < 3; ++r) {
    CHECK(static_cast<int64_t>(out[r].size()) <= limits[r]);
    for (size_t i = 0; i + 1 < out[r].size(); ++i) CHECK(out[r][i] != kEos);
    if (static_cast<int64_t>(out[r].size()) < limits[r]) CHECK(out[r].back() == kEos);
  }
  // Without an end token every row runs to its limit.
  const auto fixed = greedy_decode(decoder, Tensor(src), {2, 5, 9}, {kBos, -1});
  CHECK(fixed[0].size() == 2);
  CHECK(fixed[1].size() == 5);
  CHECK(fixed[2].size() == 9);
}

TEST_CASE("batched greedy decoding equals decoding one sentence at a time") {
  Decoder decoder(small_config(), peaked_params(small_config()), interpreter_backend());
  const std::vector<int64_t> limits(kSentences.size(), 12);
  const auto batched = decode_all(decoder, kSentences, limits, {kBos, kEos}, {1, 0.6, 128});
  for (size_t i = 0; i < kSentences.size(); ++i) {
    const auto alone = decode_all(decoder, {kSentences[i]}, {12}, {kBos, kEos}, {1, 0.6, 128});
    CHECK(batched[i] == alone[0]);
    CHECK((batched[i].empty() || batched[i].back() != kEos));  // the final eos is dropped
  }
  CHECK_THROWS_WITH_AS(decode_all(decoder, {{}}, {4}, {kBos, kEos}, {}), "decode: sentence 1 has no tokens", Error);
}

TEST_CASE("the decoder names a param of the wrong shape") {
  auto params = peaked_params(small_config());
  TransformerConfig other = small_config();
  other.vocab = 13;
  CHECK_THROWS_WITH_AS(Decoder(other, params, {}), doctest::Contains("param %embed is f32[12,32]"), Error);
  params.erase("dec.0.ffn.w1");
  CHECK_THROWS_WITH_AS(Decoder(small_config(), params, {}), "decoder: param %dec.0.ffn.w1 is missing", Error);
}

TEST_CASE("the executable cache compiles each shape once and hands the state on") {
  // A counter in state: every run adds one, whichever shape runs.
  ExecutableCache cache(
      [](const BatchShape& s) {
        const std::string n = std::to_string(s.batch);
        return parse_kir("graph @count {\n  input %x : f32[" + n +
                             "]\n  state %count : f32[]\n"
                             "  %one = fill() {shape=[], value=1.0} : f32[]\n"
                             "  %next = add(%count, %one) : f32[]\n"
                             "  %s = sum(%x) {axes=[0]} : f32[]\n"
                             "  %out = add(%s, %count) : f32[]\n"
                             "  assign(%count, %next)\n  output %out\n}\n",
                         "count.kir");
      },
      {});
  cache.set_persistent({{"count", Tensor::scalar(10)}});
  float seen = 0;
  for (int64_t n : {2, 3, 3, 2, 5}) {
    Executable& exe = cache.get({n, 1, 0});
    exe.bind("x", Tensor(Tensor::F32(xt::zeros<float>({static_cast<size_t>(n)}))));
    exe.run();
    CHECK(exe.output("out").f32()() == 10 + seen);
    ++seen;
  }
  CHECK(cache.compiled() == 3);
  CHECK(cache.persistent().at("count").f32()() == 15);
  // New persistent tensors reach every executable, the active one included.
  cache.set_persistent({{"count", Tensor::scalar(0)}});
  Executable& exe = cache.get({5, 1, 0});
  exe.run();
  CHECK(exe.output("out").f32()() == 0);
}

namespace {

// Log-probs that rank padding (0), unknown (1) and bos (2) above every other
// token, then token 5, then eos (3): what an untrained model may well do.
class SpecialsFirst final : public StepDecoder {
 public:
  void start(const Tensor& src, int64_t copies, int64_t) override {
    rows_ = src.shape().at(0) * copies;
    Tensor::F32 lp = Tensor::F32::from_shape({static_cast<size_t>(rows_), 12});
    lp.fill(-10.0f);
    for (size_t r = 0; r < static_cast<size_t>(rows_); ++r) {
      lp(r, 0) = -0.1f, lp(r, 1) = -0.2f, lp(r, 2) = -0.3f, lp(r, 5) = -1.0f, lp(r, 3) = -2.0f;
    }
    log_probs_ = Tensor(std::move(lp));
  }
  const Tensor& step(const std::vector<int32_t>&) override { return log_probs_; }
  void reorder(const std::vector<int32_t>&) override {}

 private:
  int64_t rows_ = 0;
  Tensor log_probs_;
};

bool any_special(const std::vector<int32_t>& ids) {
  return std::any_of(ids.begin(), ids.end(), [](int32_t id) { return id == 0 || id == 1 || id == 2; });
}

}  // namespace

TEST_CASE("greedy and beam search never produce padding, unknown or bos, even where they are most likely") {
  const DecodeTokens tokens{kBos, kEos, {0, 1, 2}};
  SpecialsFirst stub;
  for (const auto& out : greedy_decode(stub, row({4, 5}, 2), {4}, tokens)) CHECK(out == std::vector<int32_t>{5, 5, 5, 5});
  for (const Hypothesis& h : beam_search(stub, row({4, 5}, 2), 4, tokens, BeamOptions{4, 0.6})) CHECK(!any_special(h.tokens));
  // An untrained model: nothing it decodes holds an excluded id.
  Decoder decoder(small_config(), peaked_params(small_config()), interpreter_backend());
  for (const auto& src : kSentences) {
    for (const auto& out : greedy_decode(decoder, row(src, 5), {10}, tokens)) CHECK(!any_special(out));
    for (const Hypothesis& h : beam_search(decoder, row(src, 5), 10, tokens, BeamOptions{4, 0.6})) CHECK(!any_special(h.tokens));
  }
  // Excluding every token is an error, not a silent pick.
  DecodeTokens none = tokens;
  for (int32_t id = 0; id < 12; ++id) none.never.push_back(id);
  CHECK_THROWS_AS(greedy_decode(stub, row({4}, 1), {1}, none), Error);
}
