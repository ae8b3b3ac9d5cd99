// The trainer end to end on the copy task: a small model reaches 95% exact-match
// greedy accuracy on held-out sequences and copies 1 2 ... 10; a resumed run
// continues the same loss trajectory; a diverging run keeps its last checkpoint.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "interpreter_run.h"
#include "engine/ir/error.h"
#include "models/checkpoint.h"
#include "models/train/evaluate.h"
#include "models/train/trained_model.h"
#include "models/train/trainer.h"
#include "models/train/trainer_state.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::interpreter_run;

TEST_CASE("the copy task trains to 95 percent exact match on held-out sequences") {
  TempDir dir;
  std::ostringstream log;
  TrainOptions o;
  o.task = "copy";
  o.checkpoint_dir = dir.file("ckpt");
  o.steps = 400;
  o.d_model = 64, o.heads = 4, o.d_ff = 256, o.layers = 2;
  o.dropout = 0;
  o.warmup = 100;
  o.log = &log;
  const TrainResult r = train(o);
  CAPTURE(log.str());
  CHECK(r.last_step == 400);
  CHECK(r.exact_match >= 0.95);  // dev: sequences the training stream never yields

  TrainedModel m = load_trained_model(o.checkpoint_dir, "", {});
  const DecodeScores test = evaluate_decoding(*m.task, *m.decoder, Split::test, 0, {});
  CHECK(test.hypotheses.size() == 500);
  CHECK(test.exact_match >= 0.95);
  const std::vector<int32_t> src = m.task->encode("1 2 3 4 5 6 7 8 9 10");
  const auto out =
      decode_all(*m.decoder, {src}, {m.task->max_output_len({src, {}, "", ""})}, decode_tokens(*m.task), {});
  CHECK(m.task->decode(out[0]) == "1 2 3 4 5 6 7 8 9 10");
}

TEST_CASE("a resumed run continues the same loss trajectory") {
  TempDir dir;
  std::ostringstream log;
  const TrainResult straight = train(interpreter_run(dir.file("straight"), 8, log));
  REQUIRE(straight.train_losses.size() == 8);

  const TrainResult first = train(interpreter_run(dir.file("split"), 4, log));
  TrainOptions rest = interpreter_run(dir.file("split"), 4, log);
  rest.resume = true;
  const TrainResult resumed = train(rest);
  CHECK(first.last_step == 4);
  CHECK(resumed.first_step == 5);
  CHECK(resumed.last_step == 8);
  REQUIRE(resumed.train_losses.size() == 8);  // the history carries over
  for (size_t i = 0; i < 8; ++i) {
    CAPTURE(i);
    CHECK(resumed.train_losses[i].step == static_cast<int64_t>(i + 1));
    CHECK(resumed.train_losses[i].loss == doctest::Approx(straight.train_losses[i].loss).epsilon(1e-6));
  }
  // The loss moved: the comparison is not between constants.
  CHECK(straight.train_losses.back().loss < straight.train_losses.front().loss);

  // Settings that shape the trajectory cannot change on resume.
  TrainOptions other = rest;
  other.warmup = 7;
  CHECK_THROWS_WITH_AS(train(other), doctest::Contains("--warmup 7 differs from the run's"), Error);
}

TEST_CASE("a diverging run stops and keeps its last good checkpoint") {
  TempDir dir;
  std::ostringstream log;
  TrainOptions o = interpreter_run(dir.file("ckpt"), 3, log);
  o.lr_factor = 1e30;  // step 1 moves params to ~1e27; step 2's activations overflow
  o.save_every = 1;
  CHECK_THROWS_WITH_AS(train(o), doctest::Contains("training diverged at step 2: the loss is "), Error);
  CHECK(log.str().find("keeps its last checkpoint") != std::string::npos);
  const Checkpoint ckpt = load_checkpoint(o.checkpoint_dir);
  CHECK(trainer_state_from_json(ckpt.trainer_state).step == 1);
  for (const auto& [name, t] : ckpt.tensors) {
    CAPTURE(name);
    if (t.dtype() == DType::f32)
      CHECK(std::all_of(t.f32().begin(), t.f32().end(), [](float v) { return std::isfinite(v); }));
  }
}

TEST_CASE("with --check-numerics a diverging run names the first value that went non-finite") {
  TempDir dir;
  std::ostringstream log;
  TrainOptions o = interpreter_run(dir.file("ckpt"), 3, log);
  o.lr_factor = 1e30;
  o.save_every = 1;
  o.exec.check_numerics = true;
  check_error([&] { train(o); }, {"training diverged at step 2: check-numerics: %", "the run's first nan or inf",
                                  "made by the interpreter's node", "by op '"});
  CHECK(trainer_state_from_json(load_checkpoint(o.checkpoint_dir).trainer_state).step == 1);
}
