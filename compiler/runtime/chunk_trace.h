#pragma once
// Per-thread tracks for `kiln profile`: while tracing is on, kiln_parallel_for
// records every chunk of a parallel loop with the pool thread that ran it and
// its start and end, and a loop run whole on its caller as one chunk of thread
// 0. Tracing is for one executable at a time: the loops of two callers at once
// would both land on thread 0's track.
#include <cstdint>
#include <vector>

namespace kiln::compiler {

struct ChunkSpan {
  int thread = 0;        // 0: the thread that called kiln_parallel_for; 1...: the pool's workers
  int64_t begin_ns = 0;  // std::chrono::steady_clock, since its epoch
  int64_t end_ns = 0;
};

void trace_chunks(bool on);

// The chunks recorded since the last take (thread by thread, each in order); clears them.
std::vector<ChunkSpan> take_chunk_spans();

// Now on the clock the spans use.
int64_t trace_clock_ns();

}  // namespace kiln::compiler
