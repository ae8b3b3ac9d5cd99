#pragma once
// The memory planner: every temporary of a lowered program gets a byte offset in
// one arena. Lifetimes first (a buffer lives from the step that writes it through
// its last read, or to the end if read after the program), then a best-fit linear
// scan in step order that hands a dying operand's range to an elementwise result
// (in-place). Inputs, params and state are external: they live in their own
// persistent region and are never placed here; so are the program's outputs
// and run-invariant results, which the executable owns (program.h).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::compiler {

// One buffer of a lowered program.
struct PlanBuffer {
  std::string name;       // for reports and errors (the graph value's name)
  int64_t bytes = 0;      // may be 0
  bool external = false;  // input, param, state, output or invariant: lives outside the arena, never placed
  bool live_out = false;  // read after the last step (a graph output, or the value of an assign):
                          // must not be overwritten by any later step
  std::string scope;      // the model part that makes it, for reports ("" if none)
};

// One kernel call of the program, in execution order.
struct PlanStep {
  std::string name;         // the kernel, for reports
  std::vector<int> reads;   // buffer ids read
  std::vector<int> writes;  // buffer ids written (each non-external buffer is written by exactly one step)
  std::vector<std::pair<int, int>>
      in_place;  // (read id, write id) pairs the kernel allows to share memory
                 // (elementwise: element i of the write depends only on element i of the read)
  std::string scope;  // the model part it computes, for reports ("" if none)
};

struct MemoryPlan {
  std::vector<int64_t> offsets;  // per buffer: byte offset in the arena; -1 for external buffers
  int64_t arena_bytes = 0;       // planned peak: the arena's size
  int64_t naive_bytes = 0;       // one buffer per value: sum of the aligned sizes of all non-external buffers
  int in_place_reuses = 0;       // writes placed on a dying operand
  int64_t alignment = 64;        // every offset is a multiple of this
};

// Lifetimes, then best-fit offsets with in-place reuse where an operand dies. reuse=false (--no-reuse):
// every buffer gets its own range (arena_bytes == naive_bytes), for debugging. Throws kiln::Error on an
// ill-formed program (a buffer read before it is written, written twice or never, ids out of range, an
// in-place pair naming a buffer its step does not read or write), naming the step and buffer.
MemoryPlan plan_memory(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps, bool reuse = true);

// The independent checker: recomputes lifetimes from scratch (it shares no code with the planner, so it catches
// the planner's bugs) and returns one line per problem: two buffers live at the same time whose byte ranges
// overlap (except an allowed in-place pair at the step where the read dies and the write starts), a misaligned
// offset, a range past arena_bytes, an external buffer placed. Empty: the plan is sound.
std::vector<std::string> check_memory_plan(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps,
                                           const MemoryPlan& plan);

// `--print-memory-plan`: a table (buffer, bytes, offset, live range [first step, last step], in-place note) and a
// summary line like "memory: naive 12.5 MiB -> planned 3.1 MiB (75% less), 7 in-place reuses".
std::string memory_plan_report(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps,
                               const MemoryPlan& plan);

}  // namespace kiln::compiler
