// The step runner (models/train/step_runner.h): an update's loss, rate and
// params are those of the training graph run directly, on the whole batch or
// cut into parts; the job's loss sums the ranks', and a step that goes
// non-finite is a divergence naming its step.
#include "models/train/step_runner.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <xtensor/xmath.hpp>

#include "compiler/backend.h"
#include "engine/ir/error.h"
#include "models/train/batch_stream.h"
#include "models/transformer/transformer.h"
#include "trainer_parts_fixtures.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::copy_model;
using kiln::test::interpreter_backend;
using kiln::test::seeded_tensors;

namespace {

// A schedule whose first steps move the params visibly.
TrainerState runner_state(int64_t parts) {
  TrainerState s;
  s.lr_factor = 2;
  s.warmup = 4;
  s.parts = s.update_freq = parts;
  return s;
}

AdamOptions direct_adam(const TrainerState& s) {
  AdamOptions adam;
  adam.factor = s.lr_factor;
  adam.warmup = s.warmup;
  adam.d_model = copy_model().d_model;
  return adam;
}

// The copy task's training batch of `epoch`: 4 rows of 10 tokens.
Batch copy_batch(int64_t epoch) { return make_copy_task()->train_epoch(3, epoch, 40)->batch(0); }

StepRunner interpreter_runner(const TrainerState& s) {
  return StepRunner(copy_model(), s, 0, 1, interpreter_backend(), {}, 0, 1, std::nullopt);
}

}  // namespace

TEST_CASE("a step runner's updates are the training graph's, run directly on the same tensors") {
  const TrainerState s = runner_state(1);
  StepRunner runner = interpreter_runner(s);
  const std::map<std::string, Tensor> start = seeded_tensors(runner.step_graph(), 5);
  runner.set_persistent(start);
  const Batch first = copy_batch(0);
  REQUIRE(first.src.shape().at(0) == 4);
  auto direct = compiler::make_executable(
      build_train_graph(copy_model(), 4, shape_of(first).src_len, shape_of(first).tgt_len, direct_adam(s)),
      interpreter_backend());
  for (const auto& [name, t] : start) direct->bind(name, t);
  for (int64_t step = 1; step <= 2; ++step) {
    CAPTURE(step);
    const Batch batch = copy_batch(step - 1);
    const RankStep mine = runner.run(batch, step);
    direct->bind("src", batch.src);
    direct->bind("tgt_in", batch.tgt_in);
    direct->bind("tgt_out", batch.tgt_out);
    direct->run();
    CHECK(mine.loss == direct->output("loss").f32()());
    CHECK(mine.lr == direct->output("lr").f32()());
    CHECK(mine.tokens == batch.tgt_tokens);
    CHECK(mine.seconds > 0);
  }
  for (const auto& [name, t] : runner.persistent()) {
    CAPTURE(name);
    CHECK(test::same_bytes(t, direct->binding(name)));
  }
  const std::string param = param_types(copy_model()).front().first;
  CHECK(!test::same_bytes(runner.persistent().at(param), start.at(param)));  // the params moved
  CHECK(runner.persistent().at(kStepState).i32()() == 2);
}

TEST_CASE("a step runner's update cut into two parts (--update-freq 2) is the whole batch's") {
  const TrainerState s = runner_state(2);
  StepRunner runner = interpreter_runner(s);
  const std::map<std::string, Tensor> start = seeded_tensors(runner.step_graph(), 5);
  runner.set_persistent(start);
  const Batch batch = copy_batch(0);
  const RankStep mine = runner.run(batch, 1);

  auto whole = compiler::make_executable(
      build_train_graph(copy_model(), 4, shape_of(batch).src_len, shape_of(batch).tgt_len, direct_adam(s)),
      interpreter_backend());
  for (const auto& [name, t] : start)
    if (whole->graph().find(name)) whole->bind(name, t);
  whole->bind("src", batch.src);
  whole->bind("tgt_in", batch.tgt_in);
  whole->bind("tgt_out", batch.tgt_out);
  whole->run();
  CHECK(mine.loss == doctest::Approx(whole->output("loss").f32()()).epsilon(1e-5));
  CHECK(mine.lr == whole->output("lr").f32()());
  CHECK(mine.tokens == batch.tgt_tokens);
  const std::map<std::string, Tensor>& after = runner.persistent();
  for (const auto& [name, type] : param_types(copy_model())) {
    CAPTURE(name);
    CHECK(xt::amax(xt::abs(after.at(name).f32() - whole->binding(name).f32()))() <= 1e-5f);
    CHECK(!test::same_bytes(after.at(name), start.at(name)));                   // it moved
    CHECK(xt::amax(xt::abs(after.at(name + kGradAccSuffix).f32()))() == 0.0f);  // zeroed for the next update
  }
}

TEST_CASE("a step runner under --check-numerics stops a non-finite step as a divergence at its step") {
  compiler::BackendOptions exec = interpreter_backend();
  exec.check_numerics = true;
  StepRunner runner(copy_model(), runner_state(1), 0, 1, exec, {}, 0, 1, std::nullopt);
  std::map<std::string, Tensor> tensors = seeded_tensors(runner.step_graph(), 5);
  const std::string param = param_types(copy_model()).front().first;
  tensors.at(param).f32().fill(std::numeric_limits<float>::infinity());
  runner.set_persistent(std::move(tensors));
  try {
    runner.run(copy_batch(0), 7);
    FAIL("no divergence");
  } catch (const DivergedStep& e) {
    CHECK(e.step == 7);
    CHECK(std::string(e.what()) == "training diverged at step 7: " + e.cause);
    CHECK(e.cause.find("check-numerics") != std::string::npos);
  }
}

TEST_CASE("the job's step: one rank's as it is, two ranks' summed, and a loss that is not finite diverges") {
  const RankStep mine{0.75, 10, 1e-3, 0.5};
  const StepDecision rank0s{true, false, false};
  const JobStep alone = job_step(mine, rank0s, 10, 3);
  CHECK(alone.loss == 0.75);
  CHECK(alone.decision.evaluate);
  CHECK(!alone.decision.save);

  RankStep nan = mine;
  nan.loss = std::nan("");
  CHECK_THROWS_WITH_AS(job_step(nan, {}, 10, 4),
                       "training diverged at step 4: the loss is nan (--check-numerics names the first kernel that "
                       "makes a nan or inf)",
                       DivergedStep);

  auto job = std::make_unique<test::TwoRankJob>();
  job->others = {0.5f, 6.0f, 0.0f, 0.0f, 1.0f};  // the other rank's loss and tokens; rank 0 said stop
  const test::InstalledCollectives installed(std::move(job));
  const JobStep both = job_step(mine, rank0s, 16, 3);
  CHECK(both.loss == 1.25);
  CHECK(both.decision.evaluate);
  CHECK(!both.decision.save);
  CHECK(both.decision.stop);
  CHECK_THROWS_WITH_AS(job_step(mine, rank0s, 17, 3),
                       "the ranks disagree on the data: step 3's batch has 17 target tokens here, the ranks' parts 16",
                       Error);
}
