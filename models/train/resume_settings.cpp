#include "models/train/resume_settings.h"

#include <algorithm>
#include <array>

namespace kiln::models {
namespace {

// The budget, evaluations and saves, what is kept, and how the steps run
// (none changes the model's trajectory: the same batches, seed and schedule).
constexpr std::array<std::string_view, 14> kResumable = {
    "minutes",        "steps",      "eval-every", "eval-minutes", "save-every", "keep-snapshots", "keep-best",
    "patience",       "eval-sentences", "log-every", "backend",   "threads",    "precision",      "data-dir"};

}  // namespace

bool may_change_on_resume(std::string_view flag) {
  return std::find(kResumable.begin(), kResumable.end(), flag) != kResumable.end();
}

std::string resumable_flags_text() {
  std::string text;
  for (std::string_view flag : kResumable) {
    if (!text.empty()) text += ", ";
    text += "--";
    text += flag;
  }
  return text;
}

std::string changed_setting_message(const std::string& flag, const std::string& given, const std::string& runs,
                                    const std::string& dir) {
  return flag + " " + given + " differs from the run's " + runs + " in " + dir +
         ": a continued run keeps it (leave it out to continue the run, or train into another --checkpoint)";
}

}  // namespace kiln::models
