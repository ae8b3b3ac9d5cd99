#include "models/train/recipe.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/ir/error.h"

namespace kiln::models {
namespace {

constexpr double kAnyBudget = std::numeric_limits<double>::infinity();

// copy: the Annotated Transformer's settings (warm-up 400, factor 1) scaled to
// short runs. de-en: see models/train/README.md for the sweep behind each value.
const std::vector<BudgetRecipe> kCopy = {{kAnyBudget, {"tiny", 640, 200, 1.0, 0.1, 0.1}}};
// de-en up to 45 minutes: the sweep's best point (tiny, factor 0.5, no dropout).
// Longer: small with the rate its sweep points preferred and the paper's dropout,
// for the many epochs a long budget repeats (not swept at that length).
const std::vector<BudgetRecipe> kDeEn = {
    {45, {"tiny", 2048, 400, 0.5, 0.0, 0.1}},
    {kAnyBudget, {"small", 2048, 400, 0.5, 0.1, 0.1}},
};

// The text task's rules (fit_text_recipe), chosen by the sweeps in models/train/README.md.
// Batches of about 1/kBatchesPerEpoch of the corpus's target tokens, within these bounds:
constexpr int64_t kBatchesPerEpoch = 32;
constexpr int64_t kMinBatchTokens = 512, kMaxBatchTokens = 4096;
// `small` for budgets past kSmallMinutes on at least kSmallTokens target tokens: the
// Bible's 3-hour run (29,776 pairs) passed tiny's 30-minute one only at its end.
constexpr double kSmallMinutes = 45;
constexpr int64_t kSmallTokens = 500'000;
// What a budget trains, estimated at a nominal rate: target tokens a second of each
// preset on 2 cores of a Zen 3, compiles included (the Bible runs in README.md: tiny
// 4,659, small about 1,300), which fill about kFill of a batch's cells (the rest is
// padding: the Bible's 9 epochs took 3,351 steps of 4,096).
constexpr double kTinyTokensPerSecond = 4500, kSmallTokensPerSecond = 1300, kFill = 0.6;
// Warm-up: this share of the budget's steps, within these bounds. It also sets the
// schedule's peak rate (factor * d_model^-0.5 * warmup^-0.5), hence the floor: on the
// numbers corpus at 1 minute (models/train/README.md) 100 steps diverged, 316
// reached test BLEU 69, 527 99 and 600 94; the Bible trained 800 of 3,351 steps at
// 30 minutes, and small 2,000 of 5,649 at 3 hours.
constexpr double kWarmupShare = 0.6;
constexpr int64_t kMinWarmup = 400, kMaxWarmupTiny = 800, kMaxWarmupSmall = 2000;
// Dropout: the paper's 0.1; none below kFewEpochs (a large corpus seen about once:
// nothing to overfit, and de-en's sweep learned faster without it), 0.3 past
// kManyEpochs (and for small, whose rows always had it) against overfitting. On the
// numbers corpus 0 lost to 0.1 at 1 minute (test BLEU 83 and 84 against 99) and the
// three tied at 5 (99.7, 99.7, 99.4).
constexpr double kFewEpochs = 2, kManyEpochs = 50;

std::string format_minutes(double minutes) {
  char text[48];
  std::snprintf(text, sizeof text, "%g minute%s", minutes, minutes == 1 ? "" : "s");
  return text;
}

std::string describe(const Recipe& r) {
  char text[160];
  std::snprintf(text, sizeof text, "--config %s --batch-tokens %lld --warmup %lld --lr-factor %g --dropout %g "
                "--label-smoothing %g", r.config.c_str(), static_cast<long long>(r.batch_tokens),
                static_cast<long long>(r.warmup), r.lr_factor, r.dropout, r.label_smoothing);
  return text;
}

}  // namespace

const std::vector<BudgetRecipe>& task_recipes(const std::string& task) {
  if (task == "copy") return kCopy;
  if (task == "de-en") return kDeEn;
  if (task == "text")
    throw Error("the text task's recipe is fitted to its corpus (fit_text_recipe), not chosen from rows");
  throw Error("unknown task '" + task + "' (choices: copy, de-en, text)");
}

Recipe default_recipe(const std::string& task, double minutes) {
  for (const BudgetRecipe& row : task_recipes(task))
    if (minutes <= row.up_to_minutes) return row.recipe;
  return task_recipes(task).back().recipe;
}

std::string recipes_help() {
  std::string text = "Default recipes (each setting not given; --steps takes the task's first row):\n";
  for (const char* task : {"copy", "de-en"}) {
    for (const BudgetRecipe& row : task_recipes(task)) {
      std::string budget = "any budget";
      if (row.up_to_minutes != kAnyBudget) {
        char minutes[48];
        std::snprintf(minutes, sizeof minutes, "--minutes <= %g", row.up_to_minutes);
        budget = minutes;
      } else if (task_recipes(task).size() > 1) {
        budget = "longer";
      }
      text += "  ";
      text += task;
      text += ", ";
      text += budget;
      text += ": ";
      text += describe(row.recipe);
      text += '\n';
    }
  }
  char rules[900];
  std::snprintf(rules, sizeof rules,
                "  text, fitted to the train split and the budget (the run prints its choice and why): batches of "
                "about 1/%lld of its target tokens (%lld to %lld), tiny (small past %g minutes on %lldk+ target "
                "tokens), warm-up %g of the budget's steps (%lld to %lld, small %lld), dropout 0 below %g epochs in "
                "the budget, 0.3 past %g (and for small), else 0.1 (a budget's steps and epochs estimated at %g "
                "target tokens/s, small %g); --lr-factor 1 --label-smoothing 0.1\n",
                static_cast<long long>(kBatchesPerEpoch), static_cast<long long>(kMinBatchTokens),
                static_cast<long long>(kMaxBatchTokens), kSmallMinutes, static_cast<long long>(kSmallTokens / 1000),
                kWarmupShare, static_cast<long long>(kMinWarmup), static_cast<long long>(kMaxWarmupTiny),
                static_cast<long long>(kMaxWarmupSmall), kFewEpochs, kManyEpochs, kTinyTokensPerSecond,
                kSmallTokensPerSecond);
  return text + rules;
}

ChosenRecipe fit_text_recipe(const CorpusSize& corpus, double minutes, int64_t steps) {
  const double tokens = static_cast<double>(std::max<int64_t>(corpus.target_tokens, 1));
  Recipe r;
  r.lr_factor = 1;
  r.label_smoothing = 0.1;
  int64_t batch = kMinBatchTokens;
  while (batch < kMaxBatchTokens && 2 * batch * kBatchesPerEpoch <= corpus.target_tokens) batch *= 2;
  r.batch_tokens = batch;
  const bool small = minutes > kSmallMinutes && corpus.target_tokens >= kSmallTokens;
  r.config = small ? "small" : "tiny";
  const double rate = small ? kSmallTokensPerSecond : kTinyTokensPerSecond;
  const double step_tokens = kFill * static_cast<double>(batch);
  // No budget (kiln batches without --minutes): the warm-up's and dropout's defaults.
  const bool budget = steps > 0 || minutes > 0;
  const double budget_steps = steps > 0 ? static_cast<double>(steps) : minutes * 60 * rate / step_tokens;
  const double epochs = budget_steps * step_tokens / tokens;
  r.warmup = std::clamp<int64_t>(budget ? std::llround(kWarmupShare * budget_steps) : kMaxWarmupTiny, kMinWarmup,
                                 small ? kMaxWarmupSmall : kMaxWarmupTiny);
  r.dropout = budget && epochs < kFewEpochs ? 0.0 : small || epochs > kManyEpochs ? 0.3 : 0.1;

  char why[400];
  std::snprintf(why, sizeof why, "recipe for %lld pairs (%lld target tokens) and ",
                static_cast<long long>(corpus.pairs), static_cast<long long>(corpus.target_tokens));
  std::string text = why;
  if (steps > 0) text += std::to_string(steps) + " steps";
  else if (minutes > 0) text += format_minutes(minutes);
  else text += "no budget";
  text += ": " + describe(r);
  std::snprintf(why, sizeof why, " (about %.0f batches an epoch; %s", tokens / step_tokens,
                small ? "small for a long budget on a large corpus" : "tiny");
  text += why;
  if (budget) {
    std::snprintf(why, sizeof why, "; about %.0f steps, %.1f epochs, in the budget%s", budget_steps, epochs,
                  steps > 0 ? "" : small ? " at small's nominal rate" : " at tiny's nominal rate");
    text += why;
  }
  return {r, text + ")"};
}

ChosenRecipe choose_recipe(const Task& task, double minutes, int64_t steps) {
  if (const std::optional<CorpusSize> size = task.train_size()) return fit_text_recipe(*size, minutes, steps);
  const Recipe r = default_recipe(task.name(), minutes);
  return {r, "recipe of " + task.name() + (minutes > 0 ? " for its budget" : "") + ": " + describe(r)};
}

}  // namespace kiln::models
