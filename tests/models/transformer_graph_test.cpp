#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <xtensor/xview.hpp>

#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "models/transformer/decoder_step.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::tiny_config;
using kiln::test::tokens;

namespace {

TensorType f32(Shape s) { return {DType::f32, std::move(s)}; }

// Runs a graph on the interpreter with initial params from seed 7 and the given inputs.
std::unique_ptr<Interpreter> run(Graph g, const std::map<std::string, Tensor>& inputs) {
  auto exe = std::make_unique<Interpreter>(std::move(g));
  for (const auto& [name, t] : inputs) exe->bind(name, t);
  bind_initial_values(*exe, 7);
  exe->run();
  return exe;
}

// The largest |a - b| over rows [0, rows) of the second axis of two [B, L, ...] tensors, for batch row `r`.
float max_diff(const Tensor::F32& a, const Tensor::F32& b, size_t r, size_t rows) {
  const auto va = xt::view(a, r, xt::range(0, rows)), vb = xt::view(b, r, xt::range(0, rows));
  return xt::amax(xt::abs(va - vb))();
}

}  // namespace

TEST_CASE("presets are the issue's sizes and unknown names list the choices") {
  const TransformerConfig tiny = preset_config("tiny"), small = preset_config("small"), base = preset_config("base");
  CHECK(tiny.name == "tiny");
  CHECK((tiny.d_model == 128 && tiny.heads == 4 && tiny.d_ff == 512 && tiny.enc_layers == 2 && tiny.dec_layers == 2));
  CHECK((small.d_model == 256 && small.heads == 4 && small.d_ff == 1024 && small.enc_layers == 3));
  CHECK((base.d_model == 512 && base.heads == 8 && base.d_ff == 2048 && base.enc_layers == 6 && base.dec_layers == 6));
  CHECK_THROWS_WITH_AS(preset_config("huge"), "unknown Transformer config 'huge' (choices: tiny, small, base)", Error);
}

TEST_CASE("config JSON round-trips and bad JSON names the key") {
  TransformerConfig c = tiny_config(321, 0.25);
  c.label_smoothing = 0.05;
  c.pad_id = 3;
  c.max_len = 64;
  const TransformerConfig back = config_from_json(config_to_json(c));
  CHECK(config_to_json(back) == config_to_json(c));
  CHECK(back.vocab == 321);
  CHECK(back.dropout == 0.25);
  CHECK(back.pad_id == 3);
  CHECK(same_architecture(back, c));
  TransformerConfig other = c;
  other.dropout = 0.0;
  CHECK(same_architecture(other, c));
  other.d_ff = 256;
  CHECK_FALSE(same_architecture(other, c));

  CHECK_THROWS_WITH_AS(config_from_json("{\"name\": \"x\"}"), "Transformer config: missing key \"vocab\"", Error);
  std::string bad = config_to_json(c);
  bad.replace(bad.find("\"heads\":4"), 9, "\"heads\":\"4\"");
  CHECK_THROWS_WITH_AS(config_from_json(bad), "Transformer config: \"heads\" must be an integer", Error);
  CHECK_THROWS_WITH_AS(config_from_json("{not json"), doctest::Contains("Transformer config: bad JSON"), Error);
  CHECK_THROWS_WITH_AS(config_from_json("[1]"), "Transformer config: expected a JSON object", Error);
  // fused_loss: optional (checkpoints written before it have none: the fused loss), a boolean when given.
  c.fused_loss = false;
  std::string unfused = config_to_json(c);
  CHECK_FALSE(config_from_json(unfused).fused_loss);
  unfused.replace(unfused.find(",\"fused_loss\":false"), 19, "");
  CHECK(config_from_json(unfused).fused_loss);
  bad = config_to_json(c);
  bad.replace(bad.find("\"fused_loss\":false"), 18, "\"fused_loss\":1");
  CHECK_THROWS_WITH_AS(config_from_json(bad), "Transformer config: \"fused_loss\" must be true or false", Error);
}

TEST_CASE("validate names the bad field") {
  TransformerConfig c = tiny_config(16, 0.1);
  CHECK_NOTHROW(validate(c));
  c.heads = 3;
  CHECK_THROWS_WITH_AS(validate(c), "Transformer config: d_model (128) must be a multiple of heads (3)", Error);
  c = tiny_config(3, 0.1);
  CHECK_THROWS_WITH_AS(validate(c), "Transformer config: vocab must be at least 4, got 3", Error);
  c = tiny_config(16, 1.0);
  CHECK_THROWS_WITH_AS(validate(c), doctest::Contains("dropout must be in [0, 1)"), Error);
  c = tiny_config(16, 0.1);
  c.pad_id = 16;
  CHECK_THROWS_WITH_AS(validate(c), doctest::Contains("pad_id must be in [0, vocab)"), Error);
  CHECK_THROWS_WITH_AS(build_encoder_graph(tiny_config(16, 0.1), 2, 257),
                       "Transformer: sequence length 257 exceeds the config's max_len 256", Error);
  CHECK_THROWS_WITH_AS(build_loss_graph(tiny_config(16, 0.1), 0, 4, 4, false),
                       "Transformer: batch must be positive, got 0", Error);
}

TEST_CASE("tiny declares the tied embedding and every layer's params with their init") {
  const auto types = param_types(tiny_config(16, 0.1));
  // embed + 2 encoder layers of 16 params + 2 decoder layers of 26.
  CHECK(types.size() == 1 + 2 * 16 + 2 * 26);
  std::map<std::string, TensorType> by_name(types.begin(), types.end());
  CHECK(by_name.at("embed") == f32({16, 128}));
  CHECK(by_name.at("enc.0.self_attn.wq") == f32({128, 128}));
  CHECK(by_name.at("enc.1.self_attn.bo") == f32({128}));
  CHECK(by_name.at("enc.0.ffn.w1") == f32({128, 512}));
  CHECK(by_name.at("enc.0.ffn.b1") == f32({512}));
  CHECK(by_name.at("enc.1.ffn.w2") == f32({512, 128}));
  CHECK(by_name.at("enc.1.ln2.gamma") == f32({128}));
  CHECK(by_name.at("dec.1.cross_attn.wk") == f32({128, 128}));
  CHECK(by_name.at("dec.0.ln3.beta") == f32({128}));
  CHECK(by_name.count("enc.2.ln1.gamma") == 0);
  CHECK(by_name.count("proj") == 0);  // the pre-softmax projection is `embed`

  const Graph g = build_encoder_graph(tiny_config(16, 0.1), 1, 3);
  auto attrs = [&](const std::string& name) { return g.value(*g.find(name)).attrs; };
  CHECK(attrs("embed").get_string("init") == "normal");
  CHECK(attrs("embed").get_float("std") == doctest::Approx(1 / std::sqrt(128.0)));
  CHECK(attrs("enc.0.self_attn.wv").get_string("init") == "glorot");
  CHECK(attrs("enc.0.self_attn.bv").get_string("init") == "zeros");
  CHECK(attrs("enc.0.ln1.gamma").get_string("init") == "ones");
  const ValueInfo& pe = g.value(*g.find("pos_enc"));
  CHECK(pe.kind == ValueKind::state);
  CHECK(pe.type == f32({256, 128}));
  CHECK(pe.attrs.get_string("init") == "sinusoidal");
}

TEST_CASE("every graph verifies, declares the same params and round-trips through the text form") {
  const TransformerConfig cfg = tiny_config(16, 0.1);
  const std::vector<Graph> graphs = {build_train_graph(cfg, 2, 5, 4, {}),  build_loss_graph(cfg, 2, 5, 4, false),
                                     build_loss_graph(cfg, 2, 5, 4, true), build_encoder_graph(cfg, 2, 5),
                                     build_decoder_graph(cfg, 2, 5, 4),    build_decoder_step_graph(cfg, 2, 5, 4)};
  const auto expected = param_types(cfg);
  for (const Graph& g : graphs) {
    INFO("graph @", g.name());
    CHECK_NOTHROW(verify(g));
    const std::string text = print_kir(g);
    CHECK(print_kir(parse_kir(text, g.name() + ".kir")) == text);
    std::vector<std::pair<std::string, TensorType>> params;
    for (Value v : g.declarations(ValueKind::param)) params.emplace_back(g.name_of(v), g.type(v));
    CHECK(params == expected);
  }
  auto output_types = [](const Graph& g) {
    std::vector<std::pair<std::string, TensorType>> out;
    for (Value v : g.outputs()) out.emplace_back(g.name_of(v), g.type(v));
    return out;
  };
  using Outputs = std::vector<std::pair<std::string, TensorType>>;
  CHECK(output_types(graphs[0]) == Outputs{{"loss", f32({})}, {"lr", f32({})}});
  CHECK(output_types(graphs[1]) == Outputs{{"loss", f32({})}});
  // The encoder's memory, then the cross-attention keys and values of each
  // decoder layer's 4 heads, which the step graph reads.
  CHECK(output_types(graphs[3]) == Outputs{{"memory", f32({2, 5, 128})},
                                           {"dec.0.cross_attn.keys", f32({2, 4, 5, 32})},
                                           {"dec.0.cross_attn.values", f32({2, 4, 5, 32})},
                                           {"dec.1.cross_attn.keys", f32({2, 4, 5, 32})},
                                           {"dec.1.cross_attn.values", f32({2, 4, 5, 32})}});
  CHECK(output_types(graphs[4]) == Outputs{{"log_probs", f32({2, 4, 16})}});
  CHECK(output_types(graphs[5]) == Outputs{{"log_probs", f32({2, 16})}});
  for (const std::string& name : cross_attention_names(cfg))
    CHECK(graphs[5].type(*graphs[5].find(name)) == f32({2, 4, 5, 32}));
  // The step graph's caches hold 4 positions of each row.
  const std::vector<std::string> caches = step_cache_names(cfg);
  CHECK(caches.size() == 1 + 2 * 2);
  CHECK(graphs[5].type(*graphs[5].find(caches[0])) == TensorType{DType::i32, {2, 4}});
  for (size_t i = 1; i < caches.size(); ++i) CHECK(graphs[5].type(*graphs[5].find(caches[i])) == f32({2, 4, 4, 32}));
  // Training declares the step counter (dropout's key); inference graphs have no dropout.
  CHECK(graphs[0].find("step"));
  CHECK(graphs[2].find("step"));
  CHECK_FALSE(graphs[1].find("step"));
  for (size_t i : {1, 3, 4, 5})
    for (const Node& n : graphs[i].nodes()) CHECK(n.op() != "dropout");
  // Each dropout node draws its own mask.
  std::vector<int64_t> seeds;
  for (const Node& n : graphs[0].nodes())
    if (n.op() == "dropout") seeds.push_back(n.attrs.get_int("seed"));
  // Embedding sums (2) and every sub-layer output (2 per encoder layer, 3 per decoder layer)
  // in the forward pass, and the same masks again in the backward pass.
  CHECK(seeds.size() == 2 * (2 + 2 * 2 + 2 * 3));
  std::sort(seeds.begin(), seeds.end());
  CHECK(std::unique(seeds.begin(), seeds.end()) - seeds.begin() == 2 + 2 * 2 + 2 * 3);
}

TEST_CASE("padded source positions get no attention") {
  // The pairs padded to S = 6 and the same pairs at their own length S = 4: the
  // encoder rows and the decoder's log-probs for the real positions must agree.
  const TransformerConfig cfg = tiny_config(16, 0.1);
  const Tensor padded = tokens({{5, 6, 7, 8, 0, 0}});
  const Tensor trimmed = tokens({{5, 6, 7, 8}});
  const Tensor tgt_in = tokens({{1, 9, 10}});
  const auto enc_padded = run(build_encoder_graph(cfg, 1, 6), {{"src", padded}});
  const auto enc_trimmed = run(build_encoder_graph(cfg, 1, 4), {{"src", trimmed}});
  const Tensor::F32& m6 = enc_padded->output("memory").f32();
  const Tensor::F32& m4 = enc_trimmed->output("memory").f32();
  CHECK(max_diff(m6, m4, 0, 4) < 1e-5f);

  const auto dec_padded = run(build_decoder_graph(cfg, 1, 6, 3), {{"memory", m6}, {"src", padded}, {"tgt_in", tgt_in}});
  const auto dec_trimmed =
      run(build_decoder_graph(cfg, 1, 4, 3), {{"memory", m4}, {"src", trimmed}, {"tgt_in", tgt_in}});
  CHECK(max_diff(dec_padded->output("log_probs").f32(), dec_trimmed->output("log_probs").f32(), 0, 3) < 1e-5f);

  // A real token in place of a pad changes the result, so the comparison above can fail.
  const auto enc_longer = run(build_encoder_graph(cfg, 1, 6), {{"src", tokens({{5, 6, 7, 8, 3, 0}})}});
  CHECK(max_diff(enc_longer->output("memory").f32(), m6, 0, 4) > 1e-3f);
}

TEST_CASE("the decoder is causal: row t does not see tgt_in after t") {
  const TransformerConfig cfg = tiny_config(16, 0.1);
  const Tensor src = tokens({{5, 6, 7, 0}, {2, 3, 4, 9}});
  const auto enc = run(build_encoder_graph(cfg, 2, 4), {{"src", src}});
  const Tensor memory = enc->output("memory");
  auto log_probs = [&](const Tensor& tgt_in) {
    return run(build_decoder_graph(cfg, 2, 4, 5), {{"memory", memory}, {"src", src}, {"tgt_in", tgt_in}})
        ->output("log_probs")
        .f32();
  };
  const Tensor::F32 base = log_probs(tokens({{1, 4, 5, 6, 7}, {1, 8, 9, 0, 0}}));
  const Tensor::F32 changed = log_probs(tokens({{1, 4, 5, 11, 12}, {1, 8, 9, 10, 0}}));
  CHECK(max_diff(base, changed, 0, 3) == 0.0f);  // rows 0..2 see the same prefix
  CHECK(max_diff(base, changed, 1, 3) == 0.0f);
  CHECK(xt::amax(xt::abs(xt::view(base, 0, 3) - xt::view(changed, 0, 3)))() > 1e-3f);
  CHECK(xt::amax(xt::abs(xt::view(base, 1, 3) - xt::view(changed, 1, 3)))() > 1e-3f);
  // Each row is a distribution over the vocabulary.
  CHECK(xt::sum(xt::exp(xt::view(base, 1, 2)))() == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("the training loss graph's dropout masks are a function of the step") {
  const TransformerConfig cfg = tiny_config(16, 0.3);
  const auto batch = kiln::test::sample_batch(5);
  auto loss_at = [&](int32_t step, bool training) {
    auto exe = std::make_unique<Interpreter>(build_loss_graph(cfg, 2, 5, 5, training));
    kiln::test::bind_batch(*exe, batch);
    if (training) exe->bind("step", Tensor(Tensor::I32(step)));
    bind_initial_values(*exe, 7);
    exe->run();
    return exe->output("loss").f32()();
  };
  CHECK(loss_at(3, true) == loss_at(3, true));
  CHECK(loss_at(3, true) != loss_at(4, true));
  CHECK(loss_at(3, true) != loss_at(3, false));
  // Untrained, the loss is near that of a uniform prediction, log(16) = 2.77.
  CHECK(loss_at(0, false) == doctest::Approx(std::log(16.0)).epsilon(0.3));
}
