#pragma once
// Buffer lifetimes of a lowered program, for the memory planner and its report
// (the checker in check_memory_plan.cpp computes its own on purpose).
#include <cstdint>
#include <vector>

#include "compiler/schedule/memory_plan.h"

namespace kiln::compiler {

// Steps [first, last], both inclusive. A live_out buffer's `last` is the step
// count (past every step); an external buffer has first == last == -1.
struct Lifetime {
  int first = -1;
  int last = -1;
};

// One per buffer. Throws kiln::Error on an ill-formed program, naming the step and buffer.
std::vector<Lifetime> compute_lifetimes(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps);

// Whether step `s` may write `w` over `r`'s memory: `r` dies at `s` and nothing reads it after the program,
// `w` is written at `s`, and `w` fits in `r`. Buffers of zero bytes never share.
bool in_place_allowed(const std::vector<PlanBuffer>& buffers, const std::vector<Lifetime>& lives, int s, int r, int w);

// `bytes` rounded up to a multiple of `alignment`.
int64_t align_up(int64_t bytes, int64_t alignment);

}  // namespace kiln::compiler
