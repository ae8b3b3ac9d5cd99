#pragma once
// The default training recipe of each task for a time budget: every setting that
// `kiln train` is not given comes from here. de-en's rows were chosen by the sweep of
// tools/sweep_recipe.py, and the text task's rules fitted to a user's corpus by the
// sweeps on three corpora (the tables and the reasons are in models/train/README.md).
#include <cstdint>
#include <string>
#include <vector>

#include "models/tasks/task.h"

namespace kiln::models {

struct Recipe {
  std::string config;  // model preset (models/transformer/config.h)
  int64_t batch_tokens = 0;  // target tokens per training batch
  int64_t warmup = 0;        // Adam warm-up steps
  double lr_factor = 0;      // the schedule's factor
  double dropout = 0;
  double label_smoothing = 0;
};

// A recipe and the longest budget it is the default for.
struct BudgetRecipe {
  double up_to_minutes = 0;  // infinity for the last row
  Recipe recipe;
};

// A task's rows, shortest budget first. kiln::Error naming the choices for another task.
const std::vector<BudgetRecipe>& task_recipes(const std::string& task);

// The recipe of the first row whose budget covers `minutes`; a step budget
// (minutes <= 0) takes the first row.
Recipe default_recipe(const std::string& task, double minutes);

// A recipe and, in one line, why: what a run prints when it starts and keeps in
// its settings.toml.
struct ChosenRecipe {
  Recipe recipe;
  std::string why;
};

// The text task's recipe for a corpus of this size and a budget of `minutes`, or
// of `steps` when > 0, by the rules recipes_help() states.
ChosenRecipe fit_text_recipe(const CorpusSize& corpus, double minutes, int64_t steps = 0);

// The task's recipe: fitted to its corpus where it has a size (text), else its
// row for the budget.
ChosenRecipe choose_recipe(const Task& task, double minutes, int64_t steps = 0);

// The rows of every task as `kiln train --help` prints them, one line per row.
std::string recipes_help();

}  // namespace kiln::models
