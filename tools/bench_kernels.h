#pragma once
// `kiln bench --model ... --per-kernel`: where a training step's time goes, by
// kernel kind (matmul, flash_attention, loop, ...), at 1 thread and at the
// bench's thread count, with each kind's 2-thread speed-up.
#include "compiler/jit_executable.h"
#include "tools/cmd_bench.h"

namespace kiln::cli {

// 2 M N K per matmul node of `g`, batch dims included: a training step's (or a
// kernel's) matmul FLOPs.
int64_t matmul_flops(const Graph& g);

// Runs `exe` (bound, warmed up) opts.repeats more times per thread count with
// per-call timing, and prints the table. Leaves the thread count as it found it.
void print_kernel_table(compiler::JitExecutable& exe, const BenchOptions& opts);

}  // namespace kiln::cli
