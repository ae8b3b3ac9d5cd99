// plan_memory on random programs, judged by the independent checker, and the checker judged by planted faults.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>
#include <vector>

#include "random_program.h"

using kiln::compiler::check_memory_plan;
using kiln::compiler::MemoryPlan;
using kiln::compiler::plan_memory;

namespace {

constexpr int kPrograms = 600;

bool placed(const RandomProgram& p, int b) { return !p.buffers[b].external && p.buffers[b].bytes > 0; }

int64_t aligned(int64_t bytes) { return (bytes + 63) / 64 * 64; }

// Without reuse no two placed buffers overlap at all, live or not.
void check_disjoint(const RandomProgram& p, const MemoryPlan& plan) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int b = 0; b < static_cast<int>(p.buffers.size()); ++b)
    if (placed(p, b)) ranges.emplace_back(plan.offsets[b], plan.offsets[b] + p.buffers[b].bytes);
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) CHECK(ranges[i - 1].second <= ranges[i].first);
}

// A third, brute-force view of lifetimes: [first write, last read], to the end if live_out.
std::vector<std::pair<int, int>> brute_lifetimes(const RandomProgram& p) {
  std::vector<std::pair<int, int>> lives(p.buffers.size(), {-1, -1});
  for (int s = 0; s < static_cast<int>(p.steps.size()); ++s) {
    for (int w : p.steps[s].writes)
      if (lives[w].first < 0) lives[w] = {s, s};
    for (int r : p.steps[s].reads) lives[r].second = s;
  }
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].live_out) lives[b].second = static_cast<int>(p.steps.size());
  return lives;
}

// Moves one buffer onto another live at the same time (and never declared in place with it): the checker must
// object. Returns false if the program has no such pair.
bool plant_overlap(const RandomProgram& p, MemoryPlan& plan) {
  const auto lives = brute_lifetimes(p);
  std::set<std::pair<int, int>> declared;
  for (const auto& step : p.steps)
    for (const auto& [r, w] : step.in_place) declared.insert({std::min(r, w), std::max(r, w)});
  for (int a = 0; a < static_cast<int>(p.buffers.size()); ++a)
    for (int b = a + 1; b < static_cast<int>(p.buffers.size()); ++b) {
      if (!placed(p, a) || !placed(p, b) || declared.count({a, b})) continue;
      if (std::max(lives[a].first, lives[b].first) > std::min(lives[a].second, lives[b].second)) continue;
      plan.offsets[b] = plan.offsets[a];
      plan.arena_bytes = std::max(plan.arena_bytes, plan.offsets[a] + aligned(p.buffers[b].bytes));
      return true;
    }
  return false;
}

}  // namespace

TEST_CASE("random programs: every plan passes the checker, beats naive, and is deterministic") {
  int reuses = 0, planted = 0;
  int64_t naive = 0, arena = 0;
  for (uint32_t seed = 1; seed <= kPrograms; ++seed) {
    const RandomProgram p = random_program(seed, 1 + static_cast<int>(seed % 60));
    const MemoryPlan plan = plan_memory(p.buffers, p.steps);
    const std::vector<std::string> problems = check_memory_plan(p.buffers, p.steps, plan);
    CHECK_MESSAGE(problems.empty(), "seed ", seed, ": ", problems.empty() ? "" : problems[0]);
    CHECK(plan.arena_bytes <= plan.naive_bytes);
    // The arena ends exactly where the highest placed buffer does: the allocator wastes no space at the end.
    int64_t top = 0;
    for (int b = 0; b < static_cast<int>(p.buffers.size()); ++b)
      if (placed(p, b)) top = std::max(top, plan.offsets[b] + aligned(p.buffers[b].bytes));
    CHECK(plan.arena_bytes == top);

    const MemoryPlan again = plan_memory(p.buffers, p.steps);
    CHECK(again.offsets == plan.offsets);
    CHECK(again.arena_bytes == plan.arena_bytes);
    CHECK(again.in_place_reuses == plan.in_place_reuses);

    const MemoryPlan separate = plan_memory(p.buffers, p.steps, false);
    CHECK(check_memory_plan(p.buffers, p.steps, separate).empty());
    CHECK(separate.arena_bytes == separate.naive_bytes);
    CHECK(separate.naive_bytes == plan.naive_bytes);
    check_disjoint(p, separate);

    MemoryPlan wrong = plan;
    if (plant_overlap(p, wrong)) {
      ++planted;
      CHECK_MESSAGE(!check_memory_plan(p.buffers, p.steps, wrong).empty(), "seed ", seed);
    }
    reuses += plan.in_place_reuses;
    naive += plan.naive_bytes;
    arena += plan.arena_bytes;
  }
  // The generator must exercise what it is meant to.
  CHECK(reuses > kPrograms);
  CHECK(planted > kPrograms / 2);
  CHECK(arena < naive / 2);
  MESSAGE(kPrograms, " programs: ", reuses, " in-place reuses, ", planted, " planted overlaps caught, arena ", arena,
          " of naive ", naive, " bytes");
}

TEST_CASE("random programs: misaligned and out-of-arena faults are caught") {
  int faults = 0;
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    const RandomProgram p = random_program(seed, 20);
    const MemoryPlan plan = plan_memory(p.buffers, p.steps);
    for (int b = 0; b < static_cast<int>(p.buffers.size()); ++b) {
      if (!placed(p, b)) continue;
      MemoryPlan misaligned = plan;
      misaligned.offsets[b] += 8;
      misaligned.arena_bytes += 64;
      CHECK(!check_memory_plan(p.buffers, p.steps, misaligned).empty());
      MemoryPlan short_arena = plan;
      short_arena.arena_bytes = plan.offsets[b] + p.buffers[b].bytes - 1;
      CHECK(!check_memory_plan(p.buffers, p.steps, short_arena).empty());
      faults += 2;
      break;
    }
  }
  CHECK(faults > 150);
}

TEST_CASE("a 20,000-step program plans in well under a second") {
  const RandomProgram p = random_program(2024, 20000);
  const auto start = std::chrono::steady_clock::now();
  const MemoryPlan plan = plan_memory(p.buffers, p.steps);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  CHECK(ms < 1000);
  CHECK(check_memory_plan(p.buffers, p.steps, plan).empty());
  MESSAGE(p.steps.size(), " steps, ", p.buffers.size(), " buffers planned in ", ms, " ms: arena ", plan.arena_bytes,
          " of naive ", plan.naive_bytes, " bytes, ", plan.in_place_reuses, " in-place reuses");
}
