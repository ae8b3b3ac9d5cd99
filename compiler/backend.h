#pragma once
// One switch for every caller: the interpreter or the JIT behind the Executable API.
#include <memory>
#include <string>

#include "compiler/jit_executable.h"
#include "engine/executable.h"

namespace kiln::compiler {

struct BackendOptions {
  std::string backend = "jit";  // "jit" or "interp"
  int threads = 0;              // kiln_parallel_for's threads (runtime/thread_limit.h); 0: leave as is
  std::string target_cpu;       // jit: empty for the host CPU
  PipelineOptions pipeline;     // jit: passes, fusion, memory planning and their reports; with
                                // pipeline.passes.time_passes also the compile time by stage;
                                // interp too: pipeline.passes.precision (bf16-matmuls)
  KernelJitOptions kernels;     // jit: the kernel cache
  std::shared_ptr<Workspace> workspace;  // jit: an arena shared with other executables (null: its own)
  bool check_numerics = false;           // --check-numerics: stop at the first nan or +inf (engine/numerics.h)
};

// Throws kiln::Error for an unknown backend, an unknown CPU, or (jit) an op with
// no lowering.
std::unique_ptr<Executable> make_executable(Graph g, const BackendOptions& opts = {});

}  // namespace kiln::compiler
