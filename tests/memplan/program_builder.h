#pragma once
// Hand-made programs for the memory planner's tests, one line per buffer or step.
#include <string>
#include <utility>
#include <vector>

#include "compiler/schedule/memory_plan.h"

struct ProgramBuilder {
  std::vector<kiln::compiler::PlanBuffer> buffers;
  std::vector<kiln::compiler::PlanStep> steps;

  int buffer(std::string name, int64_t bytes, bool live_out = false) {
    buffers.push_back({std::move(name), bytes, false, live_out, {}});
    return static_cast<int>(buffers.size()) - 1;
  }
  int external(std::string name, int64_t bytes) {
    buffers.push_back({std::move(name), bytes, true, false, {}});
    return static_cast<int>(buffers.size()) - 1;
  }
  void step(std::string name, std::vector<int> reads, std::vector<int> writes,
            std::vector<std::pair<int, int>> in_place = {}) {
    steps.push_back({std::move(name), std::move(reads), std::move(writes), std::move(in_place), {}});
  }

  kiln::compiler::MemoryPlan plan(bool reuse = true) const {
    return kiln::compiler::plan_memory(buffers, steps, reuse);
  }
  std::vector<std::string> check(const kiln::compiler::MemoryPlan& p) const {
    return kiln::compiler::check_memory_plan(buffers, steps, p);
  }
};
