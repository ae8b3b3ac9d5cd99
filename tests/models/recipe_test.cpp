// The default recipes: which row a budget takes, that a run given no settings
// trains with its recipe's, and that --eval-minutes counts training time over
// resumes (evaluations and saves not included).
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>

#include "cli/temp_dir.h"
#include "interpreter_run.h"
#include "engine/ir/error.h"
#include "models/checkpoint.h"
#include "models/train/recipe.h"
#include "models/train/trainer.h"
#include "models/train/trainer_state.h"
#include "models/transformer/config.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::interpreter_run;

namespace {

bool same(const Recipe& a, const Recipe& b) {
  return a.config == b.config && a.batch_tokens == b.batch_tokens && a.warmup == b.warmup &&
         a.lr_factor == b.lr_factor && a.dropout == b.dropout && a.label_smoothing == b.label_smoothing;
}

}  // namespace

TEST_CASE("each task's recipes cover every budget, shortest first, and a budget takes the first row covering it") {
  for (const char* task : {"copy", "de-en"}) {
    CAPTURE(task);
    const std::vector<BudgetRecipe>& rows = task_recipes(task);
    REQUIRE(!rows.empty());
    CHECK(std::isinf(rows.back().up_to_minutes));
    for (size_t i = 0; i < rows.size(); ++i) {
      const Recipe& r = rows[i].recipe;
      CHECK_NOTHROW(preset_config(r.config));
      CHECK((r.batch_tokens > 0 && r.warmup > 0 && r.lr_factor > 0));
      CHECK((r.dropout >= 0 && r.dropout < 1 && r.label_smoothing >= 0 && r.label_smoothing < 1));
      if (i > 0) CHECK(rows[i - 1].up_to_minutes < rows[i].up_to_minutes);
      // The row's own budget, and one just past the previous row's, take this row.
      CHECK(same(default_recipe(task, rows[i].up_to_minutes == INFINITY ? 1e9 : rows[i].up_to_minutes), r));
      if (i > 0) CHECK(same(default_recipe(task, rows[i - 1].up_to_minutes + 0.01), r));
    }
    CHECK(same(default_recipe(task, 0), rows.front().recipe));  // a step budget
  }
  CHECK_THROWS_WITH_AS(task_recipes("reverse"), doctest::Contains("copy, de-en"), Error);
}

TEST_CASE("the text task's recipe fits the corpus and the budget") {
  CHECK_THROWS_WITH_AS(task_recipes("text"), doctest::Contains("fitted"), Error);
  const CorpusSize numbers{2000, 17'000}, bible{29'776, 930'000}, big{1'000'000, 31'000'000};
  // The Bible at 30 minutes and 3 hours: the recipes it was measured with (README.md).
  CHECK(same(fit_text_recipe(bible, 30).recipe, {"tiny", 4096, 800, 1.0, 0.1, 0.1}));
  CHECK(same(fit_text_recipe(bible, 180).recipe, {"small", 4096, 2000, 1.0, 0.3, 0.1}));
  // A small corpus: small batches and a warm-up of a share of the budget's steps,
  // tiny however long the budget, more dropout the more epochs the budget repeats.
  const Recipe one = fit_text_recipe(numbers, 1).recipe, five = fit_text_recipe(numbers, 5).recipe;
  CHECK(one.config == "tiny");
  CHECK(fit_text_recipe(numbers, 600).recipe.config == "tiny");
  CHECK((one.batch_tokens >= 512 && one.batch_tokens * 16 <= numbers.target_tokens));
  CHECK((one.warmup < five.warmup && one.warmup >= 400));  // a peak rate the numbers sweep found stable
  CHECK(one.dropout == 0.1);
  CHECK(five.dropout == 0.3);  // about 80 epochs
  CHECK(fit_text_recipe(numbers, 60).recipe.dropout == 0.3);
  // A large corpus seen less than twice: no dropout; a minute's warm-up is the least
  // that keeps the peak rate stable.
  CHECK(fit_text_recipe(big, 30).recipe.dropout == 0);
  CHECK(fit_text_recipe(big, 30).recipe.batch_tokens == 4096);
  CHECK(fit_text_recipe(big, 1).recipe.warmup == 400);
  // A step budget: its warm-up is a share of those steps; bounds hold for any size
  // and budget, none included.
  CHECK(fit_text_recipe(bible, 0, 1000).recipe.warmup == 600);
  for (const CorpusSize& size : {CorpusSize{1, 1}, numbers, bible, big}) {
    for (const auto& [minutes, steps] : std::vector<std::pair<double, int64_t>>{{0, 0}, {0, 10}, {0, 100000}, {0.1, 0}, {30, 0}}) {
      const Recipe r = fit_text_recipe(size, minutes, steps).recipe;
      CHECK((r.batch_tokens >= 512 && r.batch_tokens <= 4096 && r.warmup >= 400 && r.warmup <= 800));
      CHECK((r.dropout == 0 || r.dropout == 0.1 || r.dropout == 0.3));
    }
  }
  CHECK(fit_text_recipe(bible, 0).recipe.dropout == 0.1);  // no budget
  const std::string why = fit_text_recipe(numbers, 1).why;
  CHECK(why.find("recipe for 2000 pairs (17000 target tokens) and 1 minute: --config tiny --batch-tokens 512") == 0);
  CHECK(why.find("batches an epoch; tiny; about ") != std::string::npos);
  CHECK(fit_text_recipe(bible, 180).why.find("small for a long budget on a large corpus") != std::string::npos);
}

TEST_CASE("a run given no settings trains with its recipe's, and the given ones win") {
  TempDir dir;
  std::ostringstream log;
  const Recipe recipe = default_recipe("copy", 0);
  train(interpreter_run(dir.file("recipe"), 2, log));
  Checkpoint c = load_checkpoint(dir.file("recipe"));
  TrainerState s = trainer_state_from_json(c.trainer_state);
  CHECK(c.config.name == recipe.config + "+custom");  // the preset's name; sizes overridden
  CHECK(c.config.dropout == recipe.dropout);
  CHECK(c.config.label_smoothing == recipe.label_smoothing);
  CHECK(s.batch_tokens == recipe.batch_tokens);
  CHECK(s.warmup == recipe.warmup);
  CHECK(s.lr_factor == recipe.lr_factor);

  TrainOptions given = interpreter_run(dir.file("given"), 2, log);
  given.dropout = 0.25, given.label_smoothing = 0.05, given.batch_tokens = 320, given.warmup = 9,
  given.lr_factor = 0.5;
  train(given);
  c = load_checkpoint(dir.file("given"));
  s = trainer_state_from_json(c.trainer_state);
  CHECK(c.config.dropout == 0.25);
  CHECK(c.config.label_smoothing == 0.05);
  CHECK((s.batch_tokens == 320 && s.warmup == 9 && s.lr_factor == 0.5));

  // On resume the checkpoint's regularization carries on.
  TrainOptions resumed = interpreter_run(dir.file("given"), 2, log);
  resumed.resume = true;
  train(resumed);
  c = load_checkpoint(dir.file("given"));
  CHECK(c.config.dropout == 0.25);
  CHECK(c.config.label_smoothing == 0.05);
}

TEST_CASE("--eval-minutes evaluates and saves by training time, which carries over a resume") {
  TempDir dir;
  std::ostringstream log;
  TrainOptions o = interpreter_run(dir.file("ckpt"), 2, log);
  o.steps = 3;
  o.eval_minutes = 1e-6;  // every step of the interpreter takes longer than this
  const TrainResult first = train(o);
  CAPTURE(log.str());
  CHECK(first.dev_losses.size() == 3);  // one per step; none added at the end
  CHECK(log.str().find("min): loss") != std::string::npos);
  const double minutes = first.train_minutes;
  CHECK(minutes > 0);
  CHECK(trainer_state_from_json(load_checkpoint(o.checkpoint_dir).trainer_state).train_seconds ==
        doctest::Approx(minutes * 60));

  o.resume = true;
  o.steps = 2;
  const TrainResult second = train(o);
  CHECK(second.dev_losses.size() == 5);
  CHECK(second.train_minutes > minutes);

  o.eval_minutes = -1;
  CHECK_THROWS_WITH_AS(train(o), doctest::Contains("--eval-minutes"), Error);
}

TEST_CASE("--minutes is the whole run's budget: a resume trains what is left of it, and nothing once it is spent") {
  TempDir dir;
  std::ostringstream log;
  TrainOptions o = interpreter_run(dir.file("ckpt"), 2, log);
  const TrainResult first = train(o);
  REQUIRE(first.last_step == 2);

  o.resume = true;
  o.steps = 0;
  o.minutes = first.train_minutes;  // spent
  const TrainResult spent = train(o);
  CAPTURE(log.str());
  CHECK(spent.last_step == 2);
  CHECK(log.str().find("nothing to train: the run has trained") != std::string::npos);

  o.minutes = spent.train_minutes + 1e-5;  // 0.6 ms left: one step uses it up
  const TrainResult more = train(o);
  CHECK(more.last_step == 3);
  CHECK(more.train_minutes >= o.minutes);
}

TEST_CASE("a trainer state without the training time (before it was kept) loads with none") {
  TrainerState s;
  s.batch_tokens = 10, s.warmup = 4, s.lr_factor = 1, s.train_seconds = 12.5;
  std::string json = trainer_state_to_json(s);
  CHECK(trainer_state_from_json(json).train_seconds == 12.5);
  const size_t at = json.find(",\"train_seconds\":12.5");
  REQUIRE(at != std::string::npos);
  json.erase(at, std::string(",\"train_seconds\":12.5").size());
  CHECK(trainer_state_from_json(json).train_seconds == 0);
  s.train_seconds = -1;
  CHECK_THROWS_AS(trainer_state_from_json(trainer_state_to_json(s)), Error);
}
