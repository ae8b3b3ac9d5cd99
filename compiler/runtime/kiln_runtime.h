#pragma once
// The small runtime that generated code calls: a thread pool with a parallel-for.
// Two implementations behind this C ABI, behaving alike: thread_pool.cpp (C++),
// whose symbols the JIT engine gives JIT'd code, and kiln_runtime_aot.c (C11 and
// POSIX threads), which programs linking AOT objects compile, so that they need
// no C++ runtime.
#include <stdint.h>  // NOLINT: C header, usable from C

#ifdef __cplusplus
extern "C" {
#endif

// The body of a parallel loop: runs indices [begin, end) of the iteration space.
typedef void (*kiln_loop_body)(void* ctx, int64_t begin, int64_t end);

// Runs body(ctx, b, e) over disjoint ranges covering [0, n), of nearly equal
// lengths, at most one per thread and at most ceil(n / grain) of them, on the
// pool's threads and the caller's. Runs body(ctx, 0, n) on the calling thread
// when n <= grain, when the pool has one thread, or when the pool is busy with
// another call (nested or concurrent use).
// How indices are split never changes what each index computes, so results do
// not depend on the thread count.
void kiln_parallel_for(int64_t n, int64_t grain, kiln_loop_body body, void* ctx);

// Threads used by kiln_parallel_for, the caller included; n <= 0 means all cores.
// The C++ runtime checks n as thread_limit.h's set_threads does and throws
// kiln::Error for a count it cannot run; the AOT runtime starts what it can.
void kiln_set_num_threads(int32_t n);
int32_t kiln_num_threads(void);

// At least `bytes` of 64-byte aligned memory for a kernel's scratch (the
// blocks of logits linear_cross_entropy recomputes), owned by the calling
// thread and kept for its next call: a thread runs one kernel at a time, and
// the memory grows to the largest request and is freed when the thread ends.
// NULL when it cannot be had (the kernel then reports KILN_ERROR_OUT_OF_MEMORY).
void* kiln_scratch(int64_t bytes);

// Run-time errors of generated code (integer division by zero, an out-of-range
// gather or scatter_add index or cross_entropy label, no memory for scratch). Kernels cannot throw, so
// they record the first error in a status word that the caller passes in and
// checks after the run (see codegen/lower_graph.h).
enum kiln_error_code {
  KILN_OK = 0,
  KILN_ERROR_INTEGER_DIVISION_BY_ZERO = 1,
  KILN_ERROR_INDEX_OUT_OF_RANGE = 2,
  KILN_ERROR_OUT_OF_MEMORY = 3,
};
// A message for a status code ("div: integer division by zero").
const char* kiln_error_message(int32_t code);

#ifdef __cplusplus
}
#endif
