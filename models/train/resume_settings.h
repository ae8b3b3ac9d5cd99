#pragma once
// What a continued run may change. A run's settings are named by their flags, as
// DIR/settings.toml holds them; those listed here (the budget, when it evaluates
// and saves, what it keeps, how it runs) may differ from one part of a run to the
// next. Every other one (the task and corpus, the vocabulary, the model, the
// batches, the seed and the schedule) shapes the model or its trajectory, so a
// continued run keeps the run's and refuses another value, naming both.
#include <string>
#include <string_view>

namespace kiln::models {

// Whether a continued run may give `flag` (without its dashes: "eval-every") another value.
bool may_change_on_resume(std::string_view flag);

// "--minutes, --steps, ..., --threads": the flags that may change, for help texts.
std::string resumable_flags_text();

// The error for a setting a continued run may not change: "--d-model 48 differs
// from the run's 32 in DIR: ..." (flag with its dashes).
std::string changed_setting_message(const std::string& flag, const std::string& given, const std::string& runs,
                                    const std::string& dir);

}  // namespace kiln::models
