// The decoder-only language model: its config, graphs (the JIT against the
// interpreter, the KV-cached step against the full forward), data, sampling,
// and training with checkpoints that continue exactly.
#include "models/lm/lm.h"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <xtensor/xsort.hpp>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "compiler/backend.h"
#include "compiler/jit_executable.h"
#include "engine/ir/verifier.h"
#include "engine/param_init.h"
#include "models/checkpoint.h"
#include "models/lm/byte_corpus.h"
#include "models/lm/generator.h"
#include "models/lm/lm_trainer.h"
#include "models/model.h"

using namespace kiln;
using namespace kiln::models;

namespace lm_test {

LmConfig lm_config(const std::string& positions, const std::string& norm = "pre") {
  LmConfig c;
  c.vocab = 32;
  c.d_model = 16;
  c.heads = 2;
  c.d_ff = 32;
  c.layers = 2;
  c.context = 8;
  c.max_len = positions == "learned" ? 8 : 16;
  c.positions = positions;
  c.norm = norm;
  return c;
}

Tensor lm_tokens(int64_t rows, int64_t len, int64_t vocab, uint32_t seed) {
  auto a = Tensor::I32::from_shape({static_cast<size_t>(rows), static_cast<size_t>(len)});
  uint32_t x = seed;
  for (auto& v : a) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(vocab));
  }
  return Tensor(std::move(a));
}

compiler::BackendOptions lm_backend(const std::string& name) {
  compiler::BackendOptions o;
  o.backend = name;
  o.threads = 2;
  return o;
}

// A params map of the config, drawn with `seed`.
std::map<std::string, Tensor> lm_params(const LmConfig& cfg, uint64_t seed) {
  const Graph g = build_lm_logits_graph(cfg, 1, 1);
  std::map<std::string, Tensor> out;
  for (Value v : g.declarations())
    if (const ValueInfo& d = g.value(v); d.kind == ValueKind::param) out.emplace(d.name, initial_value(d, seed));
  return out;
}

std::string lm_write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir.file(name), std::ios::binary) << text;
  return dir.file(name);
}

}  // namespace lm_test

using namespace lm_test;

TEST_CASE("the language model's config: JSON round trip, and errors naming the key") {
  const LmConfig c = lm_config("rope", "post");
  const LmConfig back = lm_config_from_json(lm_config_to_json(c));
  CHECK(lm_config_to_json(back) == lm_config_to_json(c));
  CHECK_THROWS_WITH_AS(lm_config_from_json("{\"vocab\": 256}"), doctest::Contains("missing key \"d_model\""), Error);
  LmConfig bad = c;
  bad.positions = "alibi";
  CHECK_THROWS_WITH_AS(validate(bad), doctest::Contains("\"positions\" must be learned, sinusoidal or rope"), Error);
  bad = c;
  bad.heads = 3;
  CHECK_THROWS_WITH_AS(validate(bad), doctest::Contains("must be a multiple of \"heads\""), Error);
  bad = lm_config("learned");
  bad.max_len = 32;
  CHECK_THROWS_WITH_AS(validate(bad), doctest::Contains("\"max_len\" must equal \"context\""), Error);
  bad = c;
  bad.d_model = 1 << 30;
  bad.heads = 1;
  CHECK_THROWS_AS(validate(bad), Error);  // does not fit in memory
  CHECK_THROWS_WITH_AS(build_lm_train_graph(c, 2, 9, {}), doctest::Contains("sequence length 9 must be in 1..8"),
                       Error);
}

TEST_CASE("the model registry knows both kinds and names them in errors") {
  CHECK(model_kind_names() == std::vector<std::string>{"transformer", "lm"});
  CHECK(model_kind("lm").param_types(lm_config_to_json(lm_config("learned"))).size() ==
        lm_param_types(lm_config("learned")).size());
  CHECK_THROWS_WITH_AS(model_kind("gpt"), doctest::Contains("kinds: transformer, lm"), Error);
}

TEST_CASE("one training step of the language model: the JIT matches the interpreter") {
  for (const std::string positions : {"learned", "sinusoidal", "rope"})
    for (const std::string norm : {"pre", "post"}) {
      CAPTURE(positions);
      CAPTURE(norm);
      LmConfig cfg = lm_config(positions, norm);
      cfg.dropout = 0.1;
      AdamOptions adam;
      adam.d_model = cfg.d_model;
      adam.warmup = 10;
      const Graph g = build_lm_train_graph(cfg, 2, cfg.context, adam);
      CHECK(verify_problems(g).empty());
      const auto step_on = [&](const std::string& name) {
        auto exe = compiler::make_executable(g, lm_backend(name));
        exe->bind("tokens", lm_tokens(2, cfg.context + 1, cfg.vocab, 7));
        bind_initial_values(*exe, 3);
        exe->run();
        return exe;
      };
      const auto interp = step_on("interp"), jit = step_on("jit");
      const float loss = interp->output("loss").f32()();
      CHECK(loss == doctest::Approx(std::log(32.0)).epsilon(0.2));  // near uniform at the start
      CHECK(jit->output("loss").f32()() == doctest::Approx(loss).epsilon(1e-5));
      for (const auto& [name, type] : lm_param_types(cfg)) {
        INFO("param ", name);
        const Tensor::F32& m_ref = interp->binding(name + ".adam_m").f32();
        const Tensor::F32& m_jit = jit->binding(name + ".adam_m").f32();
        CHECK(xt::amax(xt::abs(m_jit - m_ref))() <= 1e-3f * xt::amax(xt::abs(m_ref))() + 1e-9f);
      }
    }
}

TEST_CASE("the KV-cached step gives the full forward's log-probs, position by position") {
  for (const std::string positions : {"learned", "sinusoidal", "rope"}) {
    CAPTURE(positions);
    const LmConfig cfg = lm_config(positions, positions == "sinusoidal" ? "post" : "pre");
    const int64_t len = positions == "learned" ? 8 : 12;  // rotary and sinusoidal past the context
    const std::map<std::string, Tensor> params = lm_params(cfg, 11);
    const Tensor tokens = lm_tokens(1, len, cfg.vocab, 5);
    auto full = compiler::make_executable(build_lm_logits_graph(cfg, 1, len), lm_backend("interp"));
    for (const auto& [name, t] : params) full->bind(name, t);
    bind_initial_values(*full, 0);
    full->bind("tokens", tokens);
    full->run();
    const Tensor::F32& want = full->output("log_probs").f32();

    auto step = compiler::make_executable(build_lm_step_graph(cfg, 1, len), lm_backend("jit"));
    for (const auto& [name, t] : params) step->bind(name, t);
    bind_initial_values(*step, 0);
    for (int64_t pos = 0; pos < len; ++pos) {
      CAPTURE(pos);
      auto token = Tensor::I32::from_shape({1, 1});
      token(0, 0) = tokens.i32()(0, static_cast<size_t>(pos));
      step->bind("token", Tensor(std::move(token)));
      step->bind("pos", Tensor(Tensor::I32(static_cast<int32_t>(pos))));
      step->run();
      const Tensor::F32& got = step->output("log_probs").f32();
      for (int64_t v = 0; v < cfg.vocab; ++v)
        CHECK(got(0, static_cast<size_t>(v)) ==
              doctest::Approx(want(0, static_cast<size_t>(pos), static_cast<size_t>(v))).epsilon(1e-4));
    }
  }
}

TEST_CASE("generation: greedy is the argmax, and a seed gives the same text twice") {
  const LmConfig cfg = lm_config("rope");
  const std::map<std::string, Tensor> params = lm_params(cfg, 2);
  LmGenerator gen(cfg, params, 16, lm_backend("jit"));
  SamplingOptions greedy;
  greedy.temperature = 0;
  Sampler g1(greedy, 0), g2(greedy, 1);
  const std::vector<int32_t> prompt{1, 2, 3};
  CHECK(gen.generate(prompt, 10, g1) == gen.generate(prompt, 10, g2));  // no draws
  SamplingOptions sampled;
  sampled.seed = 9;
  sampled.top_k = 5;
  sampled.top_p = 0.9;
  Sampler s1(sampled, 0), s2(sampled, 0), other(sampled, 1);
  std::vector<int32_t> streamed;
  const std::vector<int32_t> a = gen.generate(prompt, 12, s1, [&](int32_t t) { streamed.push_back(t); });
  CHECK(a.size() == 12);  // 3 + 12 <= 16 positions
  CHECK(streamed == a);
  CHECK(gen.generate(prompt, 12, s2) == a);
  CHECK(gen.generate(prompt, 12, other) != a);
  // The cache holds 16 positions: a long request stops there; a prompt that fills it is refused.
  Sampler s3(sampled, 0);
  CHECK(gen.generate(prompt, 100, s3).size() == 14);
  CHECK_THROWS_WITH_AS(gen.generate(std::vector<int32_t>(16, 1), 1, s3), doctest::Contains("leave no room"), Error);
}

TEST_CASE("the sampler: top-k 1 and temperature 0 are greedy; top-p keeps the nucleus") {
  const float lp[4] = {std::log(0.1f), std::log(0.6f), std::log(0.25f), std::log(0.05f)};
  SamplingOptions o;
  o.top_k = 1;
  Sampler k1(o, 0);
  for (int i = 0; i < 20; ++i) CHECK(k1.next(lp, 4) == 1);
  o = {};
  o.top_p = 0.8;  // 0.6 + 0.25 reaches it: tokens 1 and 2 only
  Sampler p(o, 0);
  int counts[4] = {};
  for (int i = 0; i < 2000; ++i) ++counts[p.next(lp, 4)];
  CHECK(counts[0] == 0);
  CHECK(counts[3] == 0);
  CHECK(counts[1] > counts[2]);
  CHECK(static_cast<double>(counts[1]) / 2000 == doctest::Approx(0.6 / 0.85).epsilon(0.08));
}

TEST_CASE("byte corpora: files and folders, bad paths named, deterministic windows") {
  const TempDir dir;
  std::filesystem::create_directories(dir.path() / "books" / "b");
  lm_write(dir, "books/b/2.txt", "world");
  lm_write(dir, "books/1.txt", "hello");
  const ByteCorpus books = read_byte_corpus(dir.file("books"), 1);
  CHECK(std::string(books.bytes.begin(), books.bytes.end()) == "hello\nworld");
  CHECK_THROWS_WITH_AS(read_byte_corpus(dir.file("nope.txt"), 1), doctest::Contains("nope.txt: no such file"), Error);
  CHECK_THROWS_WITH_AS(read_byte_corpus(dir.file("books/1.txt"), 9), doctest::Contains("5 bytes, fewer than the 9"),
                       Error);
  std::filesystem::create_directories(dir.path() / "empty");
  CHECK_THROWS_WITH_AS(read_byte_corpus(dir.file("empty"), 1), doctest::Contains("holds no files"), Error);

  const ByteCorpus c{"x", std::vector<uint8_t>(1000, 0)};
  ByteCorpus counting = c;
  for (size_t i = 0; i < counting.bytes.size(); ++i) counting.bytes[i] = static_cast<uint8_t>(i % 251);
  const Tensor a = window_batch(counting, 4, 16, 5, 7), b = window_batch(counting, 4, 16, 5, 7);
  CHECK(a.i32() == b.i32());
  CHECK(a.i32() != window_batch(counting, 4, 16, 5, 8).i32());
  for (size_t r = 0; r < 4; ++r)  // consecutive bytes of the corpus
    for (size_t t = 1; t < 17; ++t) CHECK((a.i32()(r, t) - a.i32()(r, t - 1) + 251) % 251 == 1);
  const DevBatches dev = dev_batches(counting, 4, 16, 10);
  CHECK(dev.windows == 8);  // whole batches
  CHECK(dev.batches.size() == 2);
  CHECK(byte_ids("é") == std::vector<int32_t>{0xc3, 0xa9});
}

TEST_CASE("training the language model: the loss falls, the checkpoint is an lm's, a continued run is the same run") {
  const TempDir dir;
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the cat sat on the mat. ";
  LmTrainOptions o;
  o.train = lm_write(dir, "train.txt", text);
  o.valid = lm_write(dir, "valid.txt", text.substr(0, 400));
  o.settings.d_model = 16;
  o.settings.heads = 2;
  o.settings.d_ff = 32;
  o.settings.layers = 1;
  o.settings.context = 16;
  o.settings.batch = 8;
  o.settings.warmup = 10;
  o.settings.lr = 1e-2;
  o.exec = lm_backend("jit");
  std::ostringstream log;
  o.log = &log;

  o.checkpoint_dir = dir.file("whole");
  o.steps = 40;
  const LmTrainResult whole = train_lm(o);
  CHECK(whole.last_step == 40);
  REQUIRE(whole.dev.size() == 5);  // each fifth of the budget
  CHECK(whole.dev.back().loss < whole.dev.front().loss - 0.5);
  CHECK(std::filesystem::exists(dir.file("whole/log.jsonl")));
  CHECK(std::filesystem::exists(dir.file("whole/loss_curve.svg")));
  const Checkpoint ckpt = load_any_checkpoint(o.checkpoint_dir);
  CHECK(ckpt.model == "lm");
  CHECK_THROWS_WITH_AS(load_checkpoint(o.checkpoint_dir), doctest::Contains("of model 'lm', not of the Transformer"),
                       Error);

  o.checkpoint_dir = dir.file("halves");
  o.steps = 20;
  train_lm(o);
  const LmTrainResult second = train_lm(o);  // continues from step 20
  CHECK(second.first_step == 20);
  CHECK(second.last_step == 40);
  const Checkpoint a = load_any_checkpoint(dir.file("whole")), b = load_any_checkpoint(dir.file("halves"));
  for (const auto& [name, t] : a.tensors) {
    INFO(name);
    if (t.dtype() == DType::f32) CHECK(xt::amax(xt::abs(t.f32() - b.tensors.at(name).f32()))() == 0.0f);
  }
  o.settings.d_model = 32;
  CHECK_THROWS_WITH_AS(train_lm(o), doctest::Contains("--d-model 32 differs from the run's 16"), Error);
  o.settings.d_model = 16;
  o.settings.max_len = 100;  // the run's: 4 x its context of 16
  CHECK_THROWS_WITH_AS(train_lm(o), doctest::Contains("--positions-max 100 differs from the run's 64"), Error);
}

TEST_CASE("the language model's training step holds no [T, T] buffer, and its memory grows linearly in T") {
  LmConfig cfg = lm_config("rope");
  cfg.layers = 1;
  const auto arena_at = [&](int64_t len) {
    cfg.context = cfg.max_len = len;
    AdamOptions adam;
    adam.d_model = cfg.d_model;
    const compiler::JitExecutable jit(build_lm_train_graph(cfg, 1, len, adam));
    for (const compiler::ProgramBuffer& buffer : jit.compiled().program.buffers)
      CHECK_MESSAGE(buffer.type.numel() < len * len, buffer.name);
    return jit.compiled().program.plan.arena_bytes;
  };
  const auto short_arena = static_cast<double>(arena_at(1024)), long_arena = static_cast<double>(arena_at(16384));
  CHECK(long_arena < 20 * short_arena);  // 16 times the length: quadratic would be 256 times
}
