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

struct RunProfile {
  int runs = 0;
  std::vector<CallSpan> calls;    // every call of every profiled run, in order
  std::vector<ChunkSpan> chunks;  // the calls' parallel-loop chunks
};

}  // namespace kiln::compiler
