#pragma once
// The lowered program (Glow's low-level IR plays this role): the compiled graph
// scheduled into an ordered list of kernel calls over buffers, with every
// temporary placed in one arena by the memory planner. It prints
// (`kiln compile --emit program`), so a reader sees what runs, in what order, on
// which bytes.
//
// Buffers: one per value of the compiled graph that holds data.
//   input, param, state  the caller's bound tensors (params and state persist)
//   output               a graph output computed by a kernel: its own tensor,
//                        written in place by the kernel, never copied
//   invariant            a result of a run-invariant call (KernelCall::invariant)
//                        that a call running at every step, or a commit, reads:
//                        persistent memory the executable owns, not the arena,
//                        so it keeps its value across runs
//   temp                 everything else: a range of the arena (memory plan);
//                        an assign's value lives there until the step commits it,
//                        unless it is written straight into its target (alias).
//                        A run-invariant result read only by other invariant
//                        calls is a temp too: it is needed only while they run
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compiler/schedule/kernel.h"
#include "compiler/schedule/memory_plan.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

enum class BufferKind { input, param, state, output, invariant, temp };
std::string_view buffer_kind_name(BufferKind k);

struct ProgramBuffer {
  std::string name;  // the graph value's
  TensorType type;
  BufferKind kind;
  Value value;       // in the compiled graph
  // An assign's value that its kernel writes straight into the assign's target
  // (this buffer id): no arena range and no copy when the step commits. Only
  // when no later kernel, output or other assign reads the target's old value,
  // and the kernel reads the target, if at all, only where it writes the value.
  int alias = -1;
  Location loc;      // the node that makes it (a declaration's: none)
  int64_t bytes() const;
};

struct KernelCall {
  size_t kernel = 0;      // into Program::kernels
  std::vector<int> args;  // buffer ids: the kernel's inputs, then its outputs
  size_t num_inputs = 0;
  size_t node = 0;        // the compiled graph's node it runs
  Location loc;           // that node's: the model scopes it computes (profiles, dumps, errors)
  // Where its time goes (kiln profile --by scope): the scopes of a fusion's ops
  // that are not elementwise (a weight gradient's matmul, not the Adam update in
  // its epilogue), or loc where every op is.
  Location owner;
  // Run-invariant: it reads only params the graph never assigns and results of
  // other invariant calls (a constant reads nothing), and makes no graph
  // output, so it computes the same at every run until a param is bound again.
  // An executable may run it only on the first run and after such a binding.
  bool invariant = false;
};

// A collective node (allreduce) of the compiled graph. It is not a kernel: the
// run starts it (results := operands, then a non-blocking sum over the ranks in
// place) and waits for it, each where the program's events say.
struct CollectiveCall {
  std::string op;         // "allreduce"
  std::vector<int> args;  // buffer ids: its operands, then its results (one per operand)
  size_t num_inputs = 0;
  size_t node = 0;        // the compiled graph's node it runs
};

// A start or a wait of a collective, run just before kernel call `before_call`
// (calls.size(): after the last). Events of one position run in their order.
// A collective starts where its node stands in the schedule, right after the
// kernels that make its operands, and is waited for just before the first
// kernel or collective that reads a result (or at the end): the kernels in
// between run while the ranks exchange data.
struct CollectiveEvent {
  enum class Kind { start, wait };
  Kind kind = Kind::start;
  size_t collective = 0;  // into Program::collectives
  size_t before_call = 0;
};

struct Program {
  std::string name;                         // the graph's
  size_t num_values = 0;                    // the compiled graph's value count
  std::vector<Kernel> kernels;              // distinct (by canonical text)
  std::vector<ProgramBuffer> buffers;
  std::vector<KernelCall> calls;            // in execution order
  std::vector<CollectiveCall> collectives;  // in node order
  std::vector<CollectiveEvent> events;      // by before_call, then in the order they run
  std::vector<int> outputs;                 // buffer per graph output, in order
  std::vector<std::pair<int, int>> assigns; // (target, value) buffers, committed after the last call
  MemoryPlan plan;                          // offsets of temps in the arena (others -1)
};

// Schedules a verified graph (fused or not) in node order, one call per node
// (assigns aside), and plans its memory (reuse = false: --no-reuse;
// update_in_place = false: every assign's value in the arena, for callers that
// keep params and state read-only, as AOT's interface does; invariants = false:
// no call is marked invariant, and every result but the outputs is a temp, for
// callers that run every call every time, as AOT's entry does).
Program build_program(const Graph& g, bool reuse = true, bool update_in_place = true, bool invariants = true);

// The memory planner's view of the program (buffers and steps: the kernel
// calls and the collectives' starts and waits, in the order they run).
std::vector<PlanBuffer> plan_buffers(const Program& p);
std::vector<PlanStep> plan_steps(const Program& p);

// The model part a call computes, for reports: its scopes' common prefix, or its
// first scope where they share none ("" for a node without scopes).
std::string call_scope(const Location& loc);

// "k3-matmul-enc.0.ffn.backward": kernel k's number and label, and the scope of
// its first call (call_scope) where it has one, in characters a file name takes
// (--dump-dir's kernels/ files).
std::string kernel_file_stem(const Program& p, size_t kernel);

// The program as text: buffers, calls, then each distinct kernel's body.
std::string print_program(const Program& p);

}  // namespace kiln::compiler
