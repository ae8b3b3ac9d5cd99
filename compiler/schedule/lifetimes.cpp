#include "compiler/schedule/lifetimes.h"

#include <algorithm>
#include <string>

#include "engine/ir/error.h"

namespace kiln::compiler {

namespace {

std::string step_label(const std::vector<PlanStep>& steps, int s) {
  return "step " + std::to_string(s) + " (" + steps[s].name + ")";
}

void check_id(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps, int s, int id,
              const char* role) {
  if (id < 0 || id >= static_cast<int>(buffers.size()))
    throw Error("memory plan: " + step_label(steps, s) + " " + role + " buffer id " + std::to_string(id) +
                ", out of range (" + std::to_string(buffers.size()) + " buffers)");
}

// A step of a horizontal kernel reads and writes thousands of buffers, with as
// many in-place pairs: each pair is looked up in sorted ids, not searched for.
std::vector<int> sorted(std::vector<int> ids) {
  std::sort(ids.begin(), ids.end());
  return ids;
}
bool contains(const std::vector<int>& sorted_ids, int id) {
  return std::binary_search(sorted_ids.begin(), sorted_ids.end(), id);
}

}  // namespace

std::vector<Lifetime> compute_lifetimes(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps) {
  for (const PlanBuffer& b : buffers)
    if (b.bytes < 0) throw Error("memory plan: buffer '" + b.name + "' has negative size " + std::to_string(b.bytes));
  std::vector<Lifetime> lives(buffers.size());
  for (int s = 0; s < static_cast<int>(steps.size()); ++s) {
    const PlanStep& step = steps[s];
    for (int r : step.reads) {
      check_id(buffers, steps, s, r, "reads");
      // The step's own writes are registered below, so a kernel reading its own result fails here too.
      if (!buffers[r].external && lives[r].first < 0)
        throw Error("memory plan: " + step_label(steps, s) + " reads buffer '" + buffers[r].name +
                    "' before it is written");
      if (!buffers[r].external) lives[r].last = s;
    }
    for (int w : step.writes) {
      check_id(buffers, steps, s, w, "writes");
      if (buffers[w].external) continue;
      if (lives[w].first >= 0)
        throw Error("memory plan: " + step_label(steps, s) + " writes buffer '" + buffers[w].name +
                    "', already written by " + step_label(steps, lives[w].first));
      lives[w] = {s, s};
    }
    if (step.in_place.empty()) continue;
    const std::vector<int> reads = sorted(step.reads), writes = sorted(step.writes);
    for (const auto& [r, w] : step.in_place) {
      check_id(buffers, steps, s, r, "has an in-place pair with");
      check_id(buffers, steps, s, w, "has an in-place pair with");
      if (!contains(reads, r) || !contains(writes, w))
        throw Error("memory plan: " + step_label(steps, s) + " has in-place pair ('" + buffers[r].name + "', '" +
                    buffers[w].name + "') but does not read the first or write the second");
    }
  }
  const int end = static_cast<int>(steps.size());
  for (size_t b = 0; b < buffers.size(); ++b) {
    if (buffers[b].external) continue;
    if (lives[b].first < 0) throw Error("memory plan: buffer '" + buffers[b].name + "' is never written");
    if (buffers[b].live_out) lives[b].last = end;
  }
  return lives;
}

bool in_place_allowed(const std::vector<PlanBuffer>& buffers, const std::vector<Lifetime>& lives, int s, int r, int w) {
  const PlanBuffer& read = buffers[r];
  const PlanBuffer& write = buffers[w];
  // A live_out operand's `last` is past every step, so `last == s` also keeps it from being overwritten.
  return !read.external && !write.external && lives[r].last == s && lives[w].first == s &&
         write.bytes > 0 && write.bytes <= read.bytes;
}

int64_t align_up(int64_t bytes, int64_t alignment) { return (bytes + alignment - 1) / alignment * alignment; }

}  // namespace kiln::compiler
