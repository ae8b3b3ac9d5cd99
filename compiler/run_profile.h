#pragma once
// What a profiled JitExecutable records (`kiln profile`, `kiln train --profile`,
// `kiln bench --per-kernel`): every kernel call's span on the calling thread, and
// the chunks of the parallel loops inside them, thread by thread.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/runtime/chunk_trace.h"

namespace kiln::compiler {

struct CallSpan {
  size_t call = 0;  // into Program::calls
  int64_t begin_ns = 0, end_ns = 0;
  double ms() const { return static_cast<double>(end_ns - begin_ns) / 1e6; }
};

// A collective of Program::collectives in one run: started (the call that
// starts it, begin to end), seen done (by a test between kernels, or when its
// wait returned), and its wait (begin to end: the time the run stood still).
struct CollectiveSpan {
  size_t collective = 0;
  int64_t start_ns = 0, started_ns = 0, done_ns = 0, wait_begin_ns = 0, wait_end_ns = 0;
};

struct RunProfile {
  int runs = 0;
  std::vector<CallSpan> calls;    // every call of every profiled run, in order
  std::vector<CollectiveSpan> collectives;  // every collective of every profiled run, in start order
  std::vector<ChunkSpan> chunks;  // the calls' parallel-loop chunks
};

}  // namespace kiln::compiler
