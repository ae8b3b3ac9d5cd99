#include "compiler/backend.h"

#include <cstdio>

#include "compiler/jit_executable.h"
#include "compiler/pipeline.h"
#include "compiler/runtime/thread_limit.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

std::unique_ptr<Executable> make_executable(Graph g, const BackendOptions& opts) {
  if (opts.threads != 0) set_threads(opts.threads, "threads");
  std::unique_ptr<Executable> exe;
  if (opts.backend == "interp") {
    // The interpreter runs no passes, but --precision bf16 is the program's
    // arithmetic, not an optimization: it rounds the same operands the JIT does.
    g = with_precision(g, opts.pipeline.passes.precision);
    exe = std::make_unique<Interpreter>(std::move(g));
  } else if (opts.backend == "jit") {
    auto jit = std::make_unique<JitExecutable>(
        std::move(g), JitOptions{opts.target_cpu, opts.pipeline, opts.kernels, opts.workspace});
    if (opts.pipeline.passes.time_passes)
      std::fputs(time_passes_report(jit->compile_times(), jit->target()).c_str(), stderr);
    exe = std::move(jit);
  } else {
    throw Error("unknown backend '" + opts.backend + "' (expected jit or interp)");
  }
  exe->check_numerics(opts.check_numerics);
  return exe;
}

}  // namespace kiln::compiler
