// Decoding with the key/value cache (the decoder step graph) against decoding
// as it was before it: the full decoder graph re-run over the whole prefix at
// every step. Same log-probs up to rounding, so the same tokens from greedy and
// beam search, on the interpreter and on the JIT.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <xtensor/xview.hpp>

#include "compiler/pipeline.h"
#include "engine/ir/error.h"
#include "engine/param_init.h"
#include "models/decode/beam.h"
#include "models/decode/decoder.h"
#include "models/decode/greedy.h"
#include "models/transformer/decoder_step.h"
#include "models/transformer/params.h"
#include "models/transformer/transformer.h"
#include "sequence_log_prob.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::kBos;
using kiln::test::kEos;

namespace {

constexpr int32_t kPad = 0;

TransformerConfig test_config() {
  TransformerConfig cfg = preset_config("tiny");
  cfg.vocab = 16;
  cfg.d_model = 32, cfg.heads = 4, cfg.d_ff = 64, cfg.enc_layers = 2, cfg.dec_layers = 2;
  cfg.max_len = 64;
  cfg.dropout = 0;
  return cfg;
}

// The init's params with the embeddings scaled by 4 and the other matrices by
// `weight_scale`: sharper output distributions (no two tokens within rounding
// of each other, so the searches' choices are stable) that vary along a
// sentence more than the init's do (an untrained model tends to repeat one
// token).
std::map<std::string, Tensor> random_params(const TransformerConfig& cfg, float weight_scale = 3) {
  std::map<std::string, Tensor> params;
  const Graph g = build_encoder_graph(cfg, 1, 1);
  for (Value v : g.declarations(ValueKind::param)) {
    Tensor t = initial_value(g.value(v), 11);
    if (g.name_of(v) == "embed")
      t.f32() *= 4.0f;
    else if (t.shape().size() == 2)
      t.f32() *= weight_scale;
    params.emplace(g.name_of(v), std::move(t));
  }
  return params;
}

compiler::BackendOptions backend(const std::string& name) {
  compiler::BackendOptions o;
  o.backend = name;
  o.threads = 2;
  return o;
}

// Rows `rows` of a [B, ...] tensor.
template <class T>
Tensor take_rows(const xt::xarray<T>& a, const std::vector<int32_t>& rows) {
  return Tensor(xt::xarray<T>(xt::view(a, xt::keep(rows))));
}

// Decoding before the cache: each step runs the full decoder graph over bos and
// every token fed so far (padded to the batch's steps) and reads the row of the
// last position.
class FullPrefixDecoder final : public StepDecoder {
 public:
  FullPrefixDecoder(const TransformerConfig& cfg, std::map<std::string, Tensor> params,
                    const compiler::BackendOptions& exec)
      : encoders_([cfg](const BatchShape& s) { return build_encoder_graph(cfg, s.batch, s.src_len); }, exec),
        decoders_([cfg](const BatchShape& s) { return build_decoder_graph(cfg, s.batch, s.src_len, s.tgt_len); },
                  exec) {
    const Graph g = build_encoder_graph(cfg, 1, 1);
    params.emplace(kPosEncState, initial_value(g.value(*g.find(kPosEncState)), 0));
    encoders_.set_persistent(params);
    decoders_.set_persistent(std::move(params));
  }

  void start(const Tensor& src, int64_t copies, int64_t steps) override {
    Executable& encoder = encoders_.get({src.shape().at(0), src.shape().at(1), 0});
    encoder.bind("src", src);
    encoder.run();
    std::vector<int32_t> source_row;
    for (int64_t r = 0; r < src.shape().at(0) * copies; ++r) source_row.push_back(static_cast<int32_t>(r / copies));
    src_ = take_rows(src.i32(), source_row);
    memory_ = take_rows(encoder.output("memory").f32(), source_row);
    prefixes_.assign(source_row.size(), {});
    steps_ = steps;
  }

  const Tensor& step(const std::vector<int32_t>& tokens) override {
    const size_t rows = prefixes_.size();
    Tensor::I32 tgt_in = Tensor::I32::from_shape({rows, static_cast<size_t>(steps_)});
    tgt_in.fill(kPad);
    for (size_t r = 0; r < rows; ++r) {
      prefixes_[r].push_back(tokens.at(r));
      std::copy(prefixes_[r].begin(), prefixes_[r].end(), &tgt_in(r, 0));
    }
    Executable& decoder = decoders_.get({static_cast<int64_t>(rows), src_.shape().at(1), steps_});
    decoder.bind("memory", memory_);
    decoder.bind("src", src_);
    decoder.bind("tgt_in", Tensor(std::move(tgt_in)));
    decoder.run();
    last_ = Tensor::F32(xt::view(decoder.output("log_probs").f32(), xt::all(), prefixes_[0].size() - 1, xt::all()));
    return last_;
  }

  void reorder(const std::vector<int32_t>& parents) override {
    std::vector<std::vector<int32_t>> reordered;
    for (int32_t p : parents) reordered.push_back(prefixes_.at(static_cast<size_t>(p)));
    prefixes_ = std::move(reordered);
    src_ = take_rows(src_.i32(), parents);
    memory_ = take_rows(memory_.f32(), parents);
  }

 private:
  ExecutableCache encoders_, decoders_;
  Tensor src_, memory_, last_;
  std::vector<std::vector<int32_t>> prefixes_;  // per row: the tokens fed
  int64_t steps_ = 0;
};

// Sources i32[rows, 8], padded.
Tensor sources(const std::vector<std::vector<int32_t>>& rows) {
  Tensor::I32 a = Tensor::I32::from_shape({rows.size(), 8});
  a.fill(kPad);
  for (size_t r = 0; r < rows.size(); ++r) std::copy(rows[r].begin(), rows[r].end(), &a(r, 0));
  return Tensor(std::move(a));
}

const std::vector<std::vector<int32_t>> kSources = {
    {4, 5, 6, 7, 8}, {9, 10, 11, 4, 5, 12, 13}, {2, 6, 2}, {15, 14, 10, 9, 8, 7, 6, 5}};

float max_abs_diff(const Tensor& a, const Tensor& b) { return xt::amax(xt::abs(a.f32() - b.f32()))(); }

}  // namespace

TEST_CASE("the cached step gives the full decoder's log-probs at every position, pad tokens and reorders included") {
  const TransformerConfig cfg = test_config();
  for (const std::string name : {"interp", "jit"}) {
    INFO("backend ", name);
    Decoder cached(cfg, random_params(cfg), backend(name));
    FullPrefixDecoder full(cfg, random_params(cfg), backend(name));
    // Two sources, two rows each; row r is fed fed[t][r] at position t. A pad
    // token at position 2 of row 1 is masked as a key from then on.
    const Tensor src = sources({kSources[1], kSources[2]});
    const std::vector<std::vector<int32_t>> fed = {{kBos, kBos, kBos, kBos}, {4, 5, 6, 7}, {9, kPad, 11, 12},
                                                   {13, 14, 15, 2},          {5, 5, 6, 6}, {7, 8, 9, 10}};
    cached.start(src, 2, static_cast<int64_t>(fed.size()));
    full.start(src, 2, static_cast<int64_t>(fed.size()));
    for (size_t t = 0; t < fed.size(); ++t) {
      INFO("position ", t);
      // After position 3 the rows continue from rows 1, 1, 3 and 0 (two rows
      // share a history, one history is dropped, two swap sources); after
      // position 4 each row from one of its source's rows, as beam search's do.
      const std::map<size_t, std::vector<int32_t>> parents = {{4, {1, 1, 3, 0}}, {5, {1, 0, 3, 3}}};
      if (parents.count(t)) {
        cached.reorder(parents.at(t));
        full.reorder(parents.at(t));
      }
      const Tensor expected = full.step(fed[t]);
      const Tensor& got = cached.step(fed[t]);
      REQUIRE(got.shape() == Shape{4, cfg.vocab});
      CHECK(max_abs_diff(got, expected) < 1e-4f);
    }
  }
}

TEST_CASE("greedy and beam search over the cache choose the full-prefix decoder's tokens") {
  const TransformerConfig cfg = test_config();
  const DecodeTokens tokens{kBos, kEos};
  // With weights scaled by 2, rows generate pad tokens now and then, which the
  // full decoder masks as keys.
  for (const auto& [name, weight_scale] :
       std::vector<std::pair<std::string, float>>{{"interp", 2.0f}, {"interp", 3.0f}, {"jit", 2.0f}, {"jit", 3.0f}}) {
    INFO("backend ", name, ", weights scaled by ", weight_scale);
    Decoder cached(cfg, random_params(cfg, weight_scale), backend(name));
    FullPrefixDecoder full(cfg, random_params(cfg, weight_scale), backend(name));

    const std::vector<int64_t> limits{12, 5, 0, 20};
    const auto greedy = greedy_decode(cached, sources(kSources), limits, tokens);
    CHECK(greedy == greedy_decode(full, sources(kSources), limits, tokens));
    // Not a trivial comparison: several tokens, pad among them where expected.
    std::set<int32_t> generated;
    for (const auto& row : greedy) generated.insert(row.begin(), row.end());
    CHECK(generated.size() >= 2);
    CHECK(generated.count(kPad) == (weight_scale == 2.0f ? 1 : 0));

    for (const auto& source : kSources) {
      const auto got = beam_search(cached, sources({source}), 12, tokens, {3, 0.6});
      const auto expected = beam_search(full, sources({source}), 12, tokens, {3, 0.6});
      REQUIRE(got.size() == expected.size());
      for (size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].tokens == expected[i].tokens);
        // The cached step's products take the few-rows GEMM, the full prefix's
        // the packed one: their sums round otherwise. With weights scaled by 3
        // that moved a total by 3.1e-5 of it on AVX-512 (16-lane chains).
        CHECK(got[i].log_prob == doctest::Approx(expected[i].log_prob).epsilon(5e-5));
        // Beam search reorders the rows of both alike: each hypothesis scored
        // alone, its tokens fed, checks the reordering itself. Alone, one row
        // runs other shapes than the beam's three, whose sums round otherwise;
        // with weights scaled by 3 that moved a total by 1.3e-5 of it (with
        // the few-rows GEMM's order of sums: pretranspose-weights).
        CHECK(test::sequence_log_prob(full, sources({source}), got[i].tokens, kBos) ==
              doctest::Approx(got[i].log_prob).epsilon(5e-5));
      }
    }
  }
}

TEST_CASE("one compiled step graph serves every position of a batch") {
  const TransformerConfig cfg = test_config();
  std::vector<std::string> compiled;
  Decoder decoder(cfg, random_params(cfg), backend("interp"),
                  [&](const std::string& graph, const BatchShape& shape, double) {
                    compiled.push_back(graph + " " + shape.str());
                  });
  const std::vector<int64_t> limits{20, 20, 20, 20};
  greedy_decode(decoder, sources(kSources), limits, {kBos, -1});
  greedy_decode(decoder, sources(kSources), limits, {kBos, -1});
  CHECK(compiled ==
        std::vector<std::string>{"transformer_encoder [B=4 S=8]", "transformer_decoder_step [B=4 S=8 T=32]"});
}

TEST_CASE("the step graph writes its caches in place, one position each (update_slice)") {
  const compiler::CompiledGraph c = compiler::compile_graph(build_decoder_step_graph(test_config(), 4, 8, 16));
  const compiler::Program& p = c.program;
  REQUIRE(p.assigns.size() == step_cache_names(test_config()).size());
  for (const auto& [target, value] : p.assigns) {
    INFO("cache %", p.buffers[static_cast<size_t>(target)].name);
    CHECK(p.buffers[static_cast<size_t>(value)].alias == target);
  }
  size_t writes = 0;
  for (const compiler::KernelCall& call : p.calls) writes += p.kernels[call.kernel].label == "update_slice";
  CHECK(writes == p.assigns.size());
}

TEST_CASE("the decoder refuses steps it cannot take") {
  const TransformerConfig cfg = test_config();
  Decoder decoder(cfg, random_params(cfg), backend("interp"));
  CHECK_THROWS_WITH_AS(decoder.step({kBos}), "decoder: step() without a batch (start() first)", Error);
  CHECK_THROWS_WITH_AS(decoder.reorder({0}), "decoder: reorder() without a batch (start() first)", Error);
  decoder.start(sources({kSources[0]}), 2, 3);  // caches of 8 positions
  CHECK_THROWS_WITH_AS(decoder.step({kBos}), "decoder: 1 tokens for 2 rows", Error);
  CHECK_THROWS_WITH_AS(decoder.reorder({0, 2}), "decoder: parent row 2 of 2", Error);
  CHECK_THROWS_WITH_AS(decoder.reorder({0}), "decoder: 1 parents for 2 rows", Error);
  for (int i = 0; i < 8; ++i) decoder.step({kBos, kBos});
  CHECK_THROWS_WITH_AS(decoder.step({kBos, kBos}),
                       "decoder: position 8 is past the cache's 8 (start() with more steps)", Error);
  CHECK_THROWS_WITH_AS(decoder.start(sources({kSources[0]}), 0, 3),
                       "decoder: each source row needs at least one row, got 0", Error);
}
