// The planner. One path only: a linear scan in step order with a best-fit free
// list. We do not also run a greedy-by-size pass (TFLite's) and keep the smaller
// peak: its usual form is O(n^2) in the buffer count, too slow for a 20,000-step
// training program, and it cannot hand a dying operand's range to the result of
// the same step as directly as a scan in step order does.
#include "compiler/schedule/memory_plan.h"

#include <map>
#include <utility>
#include <vector>

#include "compiler/schedule/arena_allocator.h"
#include "compiler/schedule/lifetimes.h"

namespace kiln::compiler {

namespace {

// Every placed buffer in its own range, in id order: nothing ever overlaps.
void place_without_reuse(const std::vector<PlanBuffer>& buffers, MemoryPlan& plan) {
  for (size_t b = 0; b < buffers.size(); ++b) {
    if (buffers[b].external || buffers[b].bytes == 0) continue;
    plan.offsets[b] = plan.arena_bytes;
    plan.arena_bytes += align_up(buffers[b].bytes, plan.alignment);
  }
}

// A step's in-place pairs grouped by their write, each group in the step's order.
std::map<int, std::vector<int>> donors_by_write(const PlanStep& step) {
  std::map<int, std::vector<int>> donors;
  for (const auto& [r, w] : step.in_place) donors[w].push_back(r);
  return donors;
}

// The smallest of `donors` step `s` may overwrite with `w` (first listed on ties), or -1. `owned` is 0 for
// operands already handed to another result of this step.
int pick_donor(const std::vector<PlanBuffer>& buffers, const std::vector<Lifetime>& lives,
               const std::vector<int64_t>& owned, int s, const std::vector<int>& donors, int w) {
  int donor = -1;
  for (int r : donors) {
    if (owned[r] == 0 || !in_place_allowed(buffers, lives, s, r, w)) continue;
    if (donor < 0 || buffers[r].bytes < buffers[donor].bytes) donor = r;
  }
  return donor;
}

void place_with_reuse(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps,
                      const std::vector<Lifetime>& lives, MemoryPlan& plan) {
  ArenaAllocator arena;
  std::vector<int64_t> owned(buffers.size(), 0);  // bytes of arena a buffer holds from its offset on
  std::vector<std::pair<int64_t, int64_t>> releases;
  for (int s = 0; s < static_cast<int>(steps.size()); ++s) {
    const PlanStep& step = steps[s];
    const std::map<int, std::vector<int>> donors = donors_by_write(step);
    // Results first, then the ranges dying here: a kernel reads its operands while it writes its results.
    for (int w : step.writes) {
      if (buffers[w].external || buffers[w].bytes == 0) continue;
      const int64_t bytes = align_up(buffers[w].bytes, plan.alignment);
      const auto candidates = donors.find(w);
      const int donor = candidates == donors.end() ? -1 : pick_donor(buffers, lives, owned, s, candidates->second, w);
      if (donor >= 0) {
        plan.offsets[w] = plan.offsets[donor];
        // The operand's tail past the result is still read in this step, so it is freed with the dying ranges.
        if (owned[donor] > bytes) releases.emplace_back(plan.offsets[donor] + bytes, owned[donor] - bytes);
        owned[donor] = 0;
        ++plan.in_place_reuses;
      } else {
        plan.offsets[w] = arena.allocate(bytes);
      }
      owned[w] = bytes;
    }
    for (const std::vector<int>* ids : {&step.reads, &step.writes})
      for (int b : *ids)
        if (owned[b] > 0 && lives[b].last == s) {
          releases.emplace_back(plan.offsets[b], owned[b]);
          owned[b] = 0;
        }
    for (const auto& [offset, bytes] : releases) arena.release(offset, bytes);
    releases.clear();
  }
  plan.arena_bytes = arena.size();
}

}  // namespace

MemoryPlan plan_memory(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps, bool reuse) {
  const std::vector<Lifetime> lives = compute_lifetimes(buffers, steps);
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), -1);
  for (size_t b = 0; b < buffers.size(); ++b) {
    if (buffers[b].external) continue;
    plan.offsets[b] = 0;  // zero-byte buffers stay here; they overlap nothing
    plan.naive_bytes += align_up(buffers[b].bytes, plan.alignment);
  }
  if (reuse)
    place_with_reuse(buffers, steps, lives, plan);
  else
    place_without_reuse(buffers, plan);
  return plan;
}

}  // namespace kiln::compiler
