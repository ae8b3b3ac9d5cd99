// The plan's independent checker. It recomputes lifetimes its own way (a birth
// and a death per buffer, then a sweep over the steps) and shares nothing with
// lifetimes.cpp, so a bug there shows up here as a problem instead of hiding.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/schedule/memory_plan.h"

namespace kiln::compiler {

namespace {

std::string quoted(const PlanBuffer& b) { return "'" + b.name + "'"; }

std::string range(int64_t offset, int64_t bytes) {
  return std::string("[") + std::to_string(offset) + ", " + std::to_string(offset + bytes) + ")";
}

bool has(const std::vector<int>& ids, int id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

class Checker {
 public:
  Checker(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps, const MemoryPlan& plan)
      : buffers_(buffers), steps_(steps), plan_(plan) {}

  std::vector<std::string> run() {
    if (plan_.offsets.size() != buffers_.size()) {
      problem("the plan has " + std::to_string(plan_.offsets.size()) + " offsets for " +
              std::to_string(buffers_.size()) + " buffers");
      return problems_;
    }
    if (plan_.alignment <= 0) {
      problem("the plan's alignment is " + std::to_string(plan_.alignment));
      return problems_;
    }
    check_placements();
    find_births_and_deaths();
    find_allowed_in_place();
    sweep();
    return problems_;
  }

 private:
  void problem(std::string line) { problems_.push_back(std::move(line)); }

  bool valid(int id) const { return id >= 0 && id < static_cast<int>(buffers_.size()); }

  std::string step_label(int s) const { return "step " + std::to_string(s) + " (" + steps_[s].name + ")"; }

  void check_placements() {
    int64_t naive = 0;
    for (size_t b = 0; b < buffers_.size(); ++b) {
      const PlanBuffer& buf = buffers_[b];
      const int64_t offset = plan_.offsets[b];
      if (buf.external) {
        if (offset != -1) problem("external buffer " + quoted(buf) + " is placed at offset " + std::to_string(offset));
        continue;
      }
      naive += (buf.bytes + plan_.alignment - 1) / plan_.alignment * plan_.alignment;
      if (offset < 0) {
        problem("buffer " + quoted(buf) + " has no offset (" + std::to_string(offset) + ")");
        continue;
      }
      if (offset % plan_.alignment != 0)
        problem("buffer " + quoted(buf) + " at offset " + std::to_string(offset) + " is not aligned to " +
                std::to_string(plan_.alignment));
      if (offset + buf.bytes > plan_.arena_bytes)
        problem("buffer " + quoted(buf) + " at " + range(offset, buf.bytes) + " ends past the arena (" +
                std::to_string(plan_.arena_bytes) + " bytes)");
    }
    if (naive != plan_.naive_bytes)
      problem("naive_bytes is " + std::to_string(plan_.naive_bytes) + ", the aligned sizes sum to " +
              std::to_string(naive));
  }

  // born: the first step writing the buffer; dies: its last read, its birth if never read, past the end if live_out.
  void find_births_and_deaths() {
    born_.assign(buffers_.size(), -1);
    dies_.assign(buffers_.size(), -1);
    for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
      for (int r : steps_[s].reads) {
        if (!valid(r)) {
          problem(step_label(s) + " reads buffer id " + std::to_string(r) + ", out of range");
        } else if (!buffers_[r].external) {
          if (born_[r] < 0) problem(step_label(s) + " reads " + quoted(buffers_[r]) + " before it is written");
          dies_[r] = s;
        }
      }
      for (int w : steps_[s].writes) {
        if (!valid(w))
          problem(step_label(s) + " writes buffer id " + std::to_string(w) + ", out of range");
        else if (!buffers_[w].external && born_[w] >= 0)
          problem(step_label(s) + " writes " + quoted(buffers_[w]) + ", already written by " + step_label(born_[w]));
        else if (!buffers_[w].external)
          born_[w] = s;
      }
    }
    for (size_t b = 0; b < buffers_.size(); ++b) {
      if (buffers_[b].external) continue;
      if (born_[b] < 0) problem("buffer " + quoted(buffers_[b]) + " is never written");
      dies_[b] = buffers_[b].live_out ? static_cast<int>(steps_.size()) : std::max(dies_[b], born_[b]);
    }
  }

  // (read, write) pairs that may share memory: the read dies at the very step the write is born.
  void find_allowed_in_place() {
    for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
      const PlanStep& step = steps_[s];
      for (const auto& [r, w] : step.in_place) {
        if (!valid(r) || !valid(w) || !has(step.reads, r) || !has(step.writes, w)) continue;
        const PlanBuffer& read = buffers_[r];
        const PlanBuffer& write = buffers_[w];
        if (read.external || write.external || read.live_out || write.bytes > read.bytes) continue;
        if (dies_[r] == s && born_[w] == s) allowed_.insert({r, w});
      }
    }
  }

  // Each buffer, at its birth, against every buffer alive then; the alive set drops buffers after their death step.
  void sweep() {
    std::vector<std::vector<int>> born_at(steps_.size());
    for (size_t b = 0; b < buffers_.size(); ++b)
      if (!buffers_[b].external && buffers_[b].bytes > 0 && born_[b] >= 0 && plan_.offsets[b] >= 0)
        born_at[born_[b]].push_back(static_cast<int>(b));
    std::vector<int> alive;
    for (int s = 0; s < static_cast<int>(steps_.size()); ++s) {
      for (int a : born_at[s]) {
        for (int b : alive)
          if (overlap(a, b) && !allowed_.count({b, a}))
            problem(quoted(buffers_[b]) + " at " + range(plan_.offsets[b], buffers_[b].bytes) + " and " +
                    quoted(buffers_[a]) + " at " + range(plan_.offsets[a], buffers_[a].bytes) +
                    " overlap while both are live at " + step_label(s));
        alive.push_back(a);
      }
      std::erase_if(alive, [&](int b) { return dies_[b] == s; });
    }
  }

  bool overlap(int a, int b) const {
    const int64_t oa = plan_.offsets[a], ob = plan_.offsets[b];
    return oa < ob + buffers_[b].bytes && ob < oa + buffers_[a].bytes;
  }

  const std::vector<PlanBuffer>& buffers_;
  const std::vector<PlanStep>& steps_;
  const MemoryPlan& plan_;
  std::vector<int> born_, dies_;
  std::set<std::pair<int, int>> allowed_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> check_memory_plan(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps,
                                           const MemoryPlan& plan) {
  return Checker(buffers, steps, plan).run();
}

}  // namespace kiln::compiler
