#pragma once
// The default training recipe of each task for a time budget: every setting that
// `kiln train` is not given comes from here. de-en's rows were chosen by the sweep of
// tools/sweep_recipe.py (its table and the reasons are in models/train/README.md).
#include <cstdint>
#include <string>
#include <vector>

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

// The rows of every task as `kiln train --help` prints them, one line per row.
std::string recipes_help();

}  // namespace kiln::models
