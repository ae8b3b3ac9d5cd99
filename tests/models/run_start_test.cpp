// Where a run starts (models/train/run_start.h): a new run's settings from the
// options over the recipe, a continued run's from its checkpoint, which keeps
// its trajectory's settings and its updates' parts on any rank count that
// divides them; its tensors from the seed or the checkpoint; and the step
// counter's checks.
#include "models/train/run_start.h"

#include <doctest/doctest.h>

#include <limits>

#include "check_error.h"
#include "models/optimizer.h"
#include "models/transformer/transformer.h"
#include "trainer_parts_fixtures.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::copy_model;

namespace {

Recipe sample_recipe() {
  Recipe r;
  r.config = "tiny";
  r.batch_tokens = 512;
  r.warmup = 400;
  r.lr_factor = 0.5;
  r.dropout = 0.1;
  r.label_smoothing = 0.1;
  return r;
}

TrainOptions options_in(const std::string& dir) {
  TrainOptions o;
  o.checkpoint_dir = dir;
  o.steps = 10;
  return o;
}

// A checkpoint of the copy model at step 3, its updates cut into `parts` parts.
Checkpoint started_run(int64_t parts, const Graph& step_graph) {
  TrainerState s;
  s.step = 3;
  s.seed = 0;
  s.batch_tokens = 640;
  s.warmup = 100;
  s.lr_factor = 1;
  s.parts = parts;
  s.update_freq = parts;
  std::map<std::string, Tensor> tensors = test::seeded_tensors(step_graph, 9);
  tensors.at(kStepState) = Tensor(Tensor::I32(3));
  return {"copy", copy_model(), tensors, trainer_state_to_json(s), "transformer", {}};
}

Graph copy_step_graph(int64_t update_freq) {
  AdamOptions adam;
  adam.d_model = copy_model().d_model;
  adam.update_freq = update_freq;
  return build_train_graph(copy_model(), 1, 1, 1, adam);
}

}  // namespace

TEST_CASE("a new run's state takes the options over the recipe, its parts the update-freq times the ranks") {
  TrainOptions o = options_in("ckpt");
  TrainerState s = initial_state(o, sample_recipe(), std::nullopt, 1);
  CHECK(s.batch_tokens == 512);
  CHECK(s.warmup == 400);
  CHECK(s.lr_factor == 0.5);
  CHECK(s.best_metric == "bleu");
  CHECK(s.parts == 1);
  o.batch_tokens = 100;
  o.lr_factor = 2;
  o.seed = 7;
  o.update_freq = 3;
  o.best_metric = "loss";
  s = initial_state(o, sample_recipe(), std::nullopt, 2);
  CHECK(s.batch_tokens == 100);
  CHECK(s.lr_factor == 2);
  CHECK(s.seed == 7);
  CHECK(s.best_metric == "loss");
  CHECK(s.update_freq == 3);
  CHECK(s.ranks == 2);
  CHECK(s.parts == 6);
}

TEST_CASE("a continued run keeps its settings and its updates' parts on any rank count that divides them") {
  const Checkpoint ckpt = started_run(4, copy_step_graph(4));
  TrainOptions o = options_in("ckpt");
  for (const auto& [ranks, update_freq] : {std::pair<int64_t, int64_t>{1, 4}, {2, 2}, {4, 1}}) {
    const TrainerState s = initial_state(o, sample_recipe(), ckpt, ranks);
    CHECK(s.step == 3);
    CHECK(s.batch_tokens == 640);  // the checkpoint's, not the recipe's
    CHECK(s.parts == 4);
    CHECK(s.update_freq == update_freq);
  }
  check_error([&] { initial_state(o, sample_recipe(), ckpt, 3); },
              {"--resume: the checkpoint's updates were 4 parts of 640 tokens (1 rank(s) x --update-freq 4), which "
               "3 ranks cannot share evenly"});
  o.update_freq = 3;
  check_error([&] { initial_state(o, sample_recipe(), ckpt, 1); },
              {"--update-freq 3 on 1 rank(s) makes updates of 3 parts"});
  o.update_freq = 0;
  o.seed = 5;
  check_error([&] { initial_state(o, sample_recipe(), ckpt, 1); }, {"--seed 5 differs from the run's 0 in ckpt"});
  o.seed.reset();
  o.lr_factor = 0.25;
  check_error([&] { initial_state(o, sample_recipe(), ckpt, 1); }, {"--lr-factor 0.25 differs from the run's 1"});
}

TEST_CASE(
    "the model: the recipe's for a new run, the checkpoint's for a continued one, sizes given win or must agree") {
  const std::unique_ptr<Task> task = make_copy_task();
  TrainOptions o = options_in("ckpt");
  TransformerConfig c = model_config(o, sample_recipe(), std::nullopt, *task);
  CHECK(c.name == "tiny");
  CHECK(c.dropout == 0.1);
  CHECK(c.vocab == task->vocab_size());
  o.d_model = 32;
  c = model_config(o, sample_recipe(), std::nullopt, *task);
  CHECK(c.name == "tiny+custom");
  CHECK(c.d_model == 32);

  const Checkpoint ckpt = started_run(1, copy_step_graph(1));
  check_error([&] { model_config(o, sample_recipe(), ckpt, *task); },
              {"--d-model 32 differs from the run's 16 in ckpt"});
  o.d_model = 0;
  c = model_config(o, sample_recipe(), ckpt, *task);
  CHECK(c.name == "test-16");
  CHECK(c.d_model == 16);
  CHECK(c.dropout == 0);  // the checkpoint's, not the recipe's
  o.dropout = 0.3;
  check_error([&] { model_config(o, sample_recipe(), ckpt, *task); }, {"--dropout 0.3 differs from the run's 0"});
}

TEST_CASE("a run's tensors: from the seed, or the checkpoint's with new accumulators at zero") {
  const Graph one_part = copy_step_graph(1), two_parts = copy_step_graph(2);
  const std::map<std::string, Tensor> seeded = initial_tensors(one_part, 4, std::nullopt, "ckpt");
  const std::string param = param_types(copy_model()).front().first;
  CHECK(test::same_bytes(seeded.at(param), initial_tensors(one_part, 4, std::nullopt, "ckpt").at(param)));
  CHECK(!test::same_bytes(seeded.at(param), initial_tensors(one_part, 5, std::nullopt, "ckpt").at(param)));

  const Checkpoint ckpt = started_run(1, one_part);
  const std::map<std::string, Tensor> resumed = initial_tensors(two_parts, 4, ckpt, "ckpt");
  CHECK(test::same_bytes(resumed.at(param), ckpt.tensors.at(param)));
  CHECK(resumed.at(param + kGradAccSuffix).f32() == Tensor::zeros(ckpt.tensors.at(param).type()).f32());

  Checkpoint missing = ckpt;
  missing.tensors.erase(param + ".adam_m");
  check_error([&] { initial_tensors(one_part, 4, missing, "ckpt"); },
              {"ckpt/checkpoint.safetensors: no tensor '" + param + ".adam_m' (state of the training step)"});
  Checkpoint mistyped = ckpt;
  mistyped.tensors.at(param) = Tensor(Tensor::F32{1.0f});
  check_error([&] { initial_tensors(one_part, 4, mistyped, "ckpt"); },
              {"tensor '" + param + "' is f32[1], the training step needs f32["});
}

TEST_CASE("the step counter must be the trainer state's step, and the steps asked must not wrap it") {
  const std::map<std::string, Tensor> tensors = {{kStepState, Tensor(Tensor::I32(3))}};
  check_step_counter(tensors, 3, 10, "ckpt");
  check_error([&] { check_step_counter(tensors, 4, 10, "ckpt"); },
              {"corrupt checkpoint: its trainer state is at step 4, its step counter 'step' at 3"});
  const int64_t last = std::numeric_limits<int32_t>::max();
  const std::map<std::string, Tensor> near_end = {{kStepState, Tensor(Tensor::I32(static_cast<int32_t>(last - 1)))}};
  check_step_counter(near_end, last - 1, 1, "ckpt");
  check_error([&] { check_step_counter(near_end, last - 1, 2, "ckpt"); },
              {"cannot train 2 more steps from step 2147483646: the step counter is an i32 and would wrap"});
}

TEST_CASE("options no run can take are refused") {
  TrainOptions o = options_in("ckpt");
  check_train_options(o);
  o.minutes = 1;
  check_error([&] { check_train_options(o); }, {"give exactly one of --minutes and --steps"});
  o.minutes = 0;
  o.best_metric = "accuracy";
  CHECK_THROWS_AS(check_train_options(o), Error);
}
