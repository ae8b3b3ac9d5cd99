#include "file_size_limit.h"
#include "side_files.h"
#include "models/checkpoint.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <xtensor/xbuilder.hpp>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "engine/safetensors.h"
#include "models/optimizer.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"
#include "text_and_files.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::checkpoint_config;
namespace fs = std::filesystem;

namespace {

// Every param with distinct values, each with its Adam moments, and the step counter.
Checkpoint sample_checkpoint(const TransformerConfig& cfg) {
  Checkpoint c;
  c.task = "copy";
  c.config = cfg;
  c.trainer_state = R"({"epoch":3,"curve":[[1,2.5],[2,2.25]]})";
  float v = 0;
  for (const auto& [name, type] : param_types(cfg)) {
    Tensor::F32 a = xt::arange<float>(static_cast<float>(type.numel())) * 0.001f + (v += 0.5f);
    a.reshape(xt_shape(type.shape));
    c.tensors.emplace(name + ".adam_m", Tensor(Tensor::F32(a * 0.1f)));
    c.tensors.emplace(name + ".adam_v", Tensor(Tensor::F32(a * a)));
    c.tensors.emplace(name, Tensor(std::move(a)));
  }
  c.tensors.emplace(kStepState, Tensor(Tensor::I32(1234)));
  return c;
}

bool same(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("save_checkpoint then load_checkpoint gives back task config trainer state and every tensor") {
  TempDir tmp;
  const std::string dir = tmp.file("run/ckpt");  // nested: created
  const Checkpoint saved = sample_checkpoint(checkpoint_config());
  save_checkpoint(dir, saved);
  CHECK(fs::exists(checkpoint_file(dir)));
  CHECK(side_files(checkpoint_file(dir)).empty());

  const Checkpoint back = load_checkpoint(dir);
  CHECK(back.task == "copy");
  CHECK(config_to_json(back.config) == config_to_json(saved.config));
  CHECK(back.trainer_state == saved.trainer_state);
  REQUIRE(back.tensors.size() == saved.tensors.size());
  for (const auto& [name, t] : saved.tensors) {
    CAPTURE(name);
    REQUIRE(back.tensors.count(name) == 1);
    CHECK(same(back.tensors.at(name), t));
  }
  check_matches(back, saved.config);

  // The file is plain safetensors with the documented metadata.
  const auto metadata = load_safetensors_metadata(checkpoint_file(dir));
  CHECK(metadata.at("format") == "kiln-checkpoint-1");
  CHECK(metadata.at("task") == "copy");
  CHECK(metadata.at("config") == config_to_json(saved.config));
}

TEST_CASE("a diverged run never replaces the good checkpoint") {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  const Checkpoint good = sample_checkpoint(checkpoint_config());
  save_checkpoint(dir, good);
  const std::string before = read_file(checkpoint_file(dir));

  for (float bad : {NAN, INFINITY, -INFINITY}) {
    Checkpoint diverged = good;
    diverged.tensors.at("embed").f32()(3, 2) = bad;  // element 3 * d_model + 2 = 26
    check_error([&] { save_checkpoint(dir, diverged); }, {dir, "tensor 'embed'", "non-finite", "element 26"});
    CHECK(read_file(checkpoint_file(dir)) == before);
    CHECK(side_files(checkpoint_file(dir)).empty());
  }

  // A write that fails half-way (a full disk) leaves it too, and says so.
  Checkpoint next = good;
  next.trainer_state = "{}";
  {
    const FileSizeLimit full_disk(before.size() / 2);
    check_error([&] { save_checkpoint(dir, next); }, {checkpoint_file(dir), "cannot write", "File too large"});
  }
  CHECK(read_file(checkpoint_file(dir)) == before);
  CHECK(side_files(checkpoint_file(dir)).empty());
  CHECK(load_checkpoint(dir).trainer_state == good.trainer_state);
}

TEST_CASE("loading a missing or damaged checkpoint is an error naming it") {
  TempDir tmp;
  check_error([&] { load_checkpoint(tmp.file("nowhere")); }, {tmp.file("nowhere"), "does not exist"});

  std::ofstream(tmp.file("plain_file")) << "x";
  check_error([&] { load_checkpoint(tmp.file("plain_file")); }, {tmp.file("plain_file"), "not a checkpoint directory"});

  fs::create_directory(tmp.file("empty"));
  check_error([&] { load_checkpoint(tmp.file("empty")); }, {tmp.file("empty"), "no checkpoint.safetensors"});

  const std::string dir = tmp.file("ckpt");
  save_checkpoint(dir, sample_checkpoint(checkpoint_config()));
  const std::string good = read_file(checkpoint_file(dir));
  const auto rewrite = [&](const std::string& bytes) {
    std::ofstream(checkpoint_file(dir), std::ios::binary) << bytes;
  };

  for (size_t len : {size_t(0), size_t(5), size_t(100), good.size() / 2, good.size() - 1}) {
    CAPTURE(len);
    rewrite(good.substr(0, len));
    check_error([&] { load_checkpoint(dir); }, {"corrupt or truncated checkpoint", checkpoint_file(dir)});
  }
  std::string flipped = good;
  flipped[8] = '[';  // the header's opening brace
  rewrite(flipped);
  check_error([&] { load_checkpoint(dir); }, {"corrupt or truncated checkpoint", checkpoint_file(dir)});
}

TEST_CASE("loading checks the format marker the metadata and the params against the stored config") {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  fs::create_directory(dir);
  const Checkpoint c = sample_checkpoint(checkpoint_config());
  const std::map<std::string, std::string> metadata = {
      {"format", "kiln-checkpoint-1"}, {"task", "copy"}, {"config", config_to_json(c.config)}, {"trainer", "{}"}};
  const auto write = [&](const std::map<std::string, Tensor>& tensors, std::map<std::string, std::string> m) {
    save_safetensors(checkpoint_file(dir), tensors, m);
  };

  write(c.tensors, metadata);
  CHECK(load_checkpoint(dir).trainer_state == "{}");

  auto m = metadata;
  m["format"] = "kiln-checkpoint-0";
  write(c.tensors, m);
  check_error([&] { load_checkpoint(dir); }, {checkpoint_file(dir), "format 'kiln-checkpoint-0'"});

  write(c.tensors, {});  // someone else's safetensors file
  check_error([&] { load_checkpoint(dir); }, {checkpoint_file(dir), "not a kiln checkpoint", "\"format\""});

  for (const char* key : {"task", "config", "trainer"}) {
    m = metadata;
    m.erase(key);
    write(c.tensors, m);
    check_error([&] { load_checkpoint(dir); }, {checkpoint_file(dir), std::string("lacks \"") + key + "\""});
  }

  m = metadata;
  m["config"] = R"({"name":"tiny"})";
  write(c.tensors, m);
  check_error([&] { load_checkpoint(dir); }, {checkpoint_file(dir), "bad model config"});

  auto missing = c.tensors;
  missing.erase("embed");
  write(missing, metadata);
  check_error([&] { load_checkpoint(dir); }, {checkpoint_file(dir), "do not fit its own config", "'embed'"});
}

TEST_CASE("a checkpoint's config, step counter and values are checked before they are trusted") {
  TempDir tmp;
  const std::string dir = tmp.file("ckpt");
  fs::create_directory(dir);
  const Checkpoint c = sample_checkpoint(checkpoint_config());
  const auto write = [&](const std::map<std::string, Tensor>& tensors, const TransformerConfig& cfg) {
    const std::map<std::string, std::string> metadata = {
        {"format", "kiln-checkpoint-1"}, {"task", "copy"}, {"config", config_to_json(cfg)}, {"trainer", "{}"}};
    save_safetensors(checkpoint_file(dir), tensors, metadata);
  };

  // A config claiming a model of terabytes is refused before any param list is built.
  TransformerConfig huge = checkpoint_config();
  huge.d_model = 1'000'000;
  write(c.tensors, huge);
  // 11e6 (embeddings) + 2 layers x (4e12 + 2 x 16e6) + 16e6 (positional encodings) f32 values.
  check_error([&] { load_checkpoint(dir); },
              {checkpoint_file(dir), "bad model config", "d_model 1000000", "needs 32000364000000 bytes"});

  // More layers than the file has tensors: corrupt, however many it claims.
  TransformerConfig deep = checkpoint_config();
  deep.enc_layers = 100'000;
  write(c.tensors, deep);
  check_error([&] { load_checkpoint(dir); },
              {checkpoint_file(dir), "corrupt checkpoint", "100000+1 layers", "more layers than the file's"});

  auto tensors = c.tensors;
  tensors.at(kStepState) = Tensor(Tensor::I32(-5));
  write(tensors, c.config);
  check_error([&] { load_checkpoint(dir); }, {checkpoint_file(dir), "step counter 'step' is negative (-5)"});
  tensors.at(kStepState) = Tensor(Tensor::F32(5.0f));
  write(tensors, c.config);
  check_error([&] { load_checkpoint(dir); }, {checkpoint_file(dir), "step counter 'step' is f32[], not i32[]"});

  for (float bad : {NAN, INFINITY}) {
    tensors = c.tensors;
    tensors.at("dec.0.ffn.w1.adam_v").f32()(1, 3) = bad;  // element 1 * d_ff + 3 = 19
    write(tensors, c.config);
    check_error([&] { load_checkpoint(dir); },
                {checkpoint_file(dir), "tensor 'dec.0.ffn.w1.adam_v' has the non-finite value", "element 19"});
  }
}

TEST_CASE("check_matches names the first param whose shape differs under another config") {
  const Checkpoint c = sample_checkpoint(checkpoint_config(8));
  check_matches(c, checkpoint_config(8));

  TransformerConfig other_dropout = checkpoint_config(8);
  other_dropout.dropout = 0.3;  // does not change any param
  check_matches(c, other_dropout);

  check_error([&] { check_matches(c, checkpoint_config(16)); },
              {"trained with config 'test-8'", "d_model 8", "not 'test-16'", "d_model 16", "param 'embed' is f32[11,8]",
               "expected f32[11,16]"});

  TransformerConfig deeper = checkpoint_config(8);
  deeper.enc_layers = 2;
  check_error([&] { check_matches(c, deeper); }, {"1+1 layers", "2+1 layers", "it has no param 'enc.1."});
}
