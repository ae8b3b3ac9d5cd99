#pragma once
// Random lowered programs for the memory planner's tests: steps that read recent
// and older buffers, write 1-3 new ones (sizes incl. 0 and repeats, so in-place
// pairs often fit), some externals (sometimes written, as assign does), random
// live_out, and in-place pairs both legal and not.
#include <cstdint>
#include <vector>

#include "compiler/schedule/memory_plan.h"

struct RandomProgram {
  std::vector<kiln::compiler::PlanBuffer> buffers;
  std::vector<kiln::compiler::PlanStep> steps;
};

RandomProgram random_program(uint32_t seed, int n_steps);
