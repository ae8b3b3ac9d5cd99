#pragma once
// Reading a RunProfile (run_profile.h) against its program: a table row per
// kernel with the work it does, and a Chrome trace (chrome://tracing, Perfetto)
// with a track per pool thread. `kiln profile` and
// `kiln train --profile` print and write these.
#include <string>
#include <vector>

#include "compiler/run_profile.h"
#include "compiler/schedule/program.h"

namespace kiln::compiler {

// The least work a kernel call does: its arithmetic (2 per multiply-add of a
// matmul or an attention product, 1 per element per other op) and the bytes of
// its operands and results, each read or written once.
struct CallCost {
  double flops = 0;
  double bytes = 0;
};
CallCost call_cost(const Program& p, const KernelCall& call);

struct KernelProfileRow {
  std::string kernel;  // describe(): kind, op count, first result type
  std::string ops;     // the ops it runs, in order, repeats counted: "matmul, add, relu" or "exp x2"
  // The model part its calls compute (call_scope of each KernelCall::owner): one,
  // or their common prefix and how many ("enc (6 scopes)"), or "" for none.
  std::string scope;
  int calls = 0;       // per run
  double ms = 0;       // per run, all its calls
  double flops = 0;    // per run
  double bytes = 0;    // per run
};

// One row per distinct kernel (its calls in a run summed, averaged over runs),
// costliest first.
std::vector<KernelProfileRow> kernel_profile(const Program& p, const RunProfile& r);

// Time per model part (PyTorch's profiler grouped by module): each call's time
// goes to the scopes of its ops that are not elementwise (KernelCall::owner: a
// weight gradient's matmul, "dec.0.ffn (backward)", and not the Adam update in
// its epilogue, "optimizer"), each cut to its first `depth` dotted parts (0:
// whole), split evenly where there are several; a call without a scope counts
// under "". Forward and backward apart, per run, costliest first.
struct ScopeProfileRow {
  std::string scope;        // the forward scope's name
  double forward_ms = 0;    // per run
  double backward_ms = 0;   // per run: its " (backward)" scope's
  double calls = 0;         // per run, a shared call counted by its share
};
std::vector<ScopeProfileRow> scope_profile(const Program& p, const RunProfile& r, int depth = 0);

// The collectives of a run, per run: bytes summed over the ranks, time in flight
// (start to seen done), time the run stood still waiting, and time spent
// starting them (copying operands, posting the sums). What was in flight but not
// waited for overlapped the kernels.
struct CollectiveTimes {
  double bytes = 0, in_flight_ms = 0, wait_ms = 0, start_ms = 0;
};
CollectiveTimes collective_times(const Program& p, const RunProfile& r);

// Chrome's trace event format: complete events ("X") in microseconds from the
// first call, a track per pool thread: the kernel calls on the caller's (thread
// 0), named by describe() with their cost as arguments, and each thread's
// parallel-loop chunks on its own (the caller's nested in its calls); the
// collectives in flight on a track of their own, their waits on the caller's.
std::string chrome_trace(const Program& p, const RunProfile& r);

}  // namespace kiln::compiler
