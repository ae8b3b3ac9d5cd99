#include "models/train/recipe.h"

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

// text (a user's corpus): not swept. Sentence pairs are longer than de-en's, so
// batches are larger; tiny for short budgets as de-en's sweep found, small with the
// paper's dropout for long ones, where a small corpus repeats many epochs.
const std::vector<BudgetRecipe> kText = {
    {45, {"tiny", 4096, 800, 1.0, 0.1, 0.1}},
    {kAnyBudget, {"small", 4096, 2000, 1.0, 0.3, 0.1}},
};

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
  if (task == "text") return kText;
  throw Error("unknown task '" + task + "' (choices: copy, de-en, text)");
}

Recipe default_recipe(const std::string& task, double minutes) {
  for (const BudgetRecipe& row : task_recipes(task))
    if (minutes <= row.up_to_minutes) return row.recipe;
  return task_recipes(task).back().recipe;
}

std::string recipes_help() {
  std::string text = "Default recipes (each setting not given; --steps takes the task's first row):\n";
  for (const char* task : {"copy", "de-en", "text"}) {
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
  return text;
}

}  // namespace kiln::models
