#include "compiler/backend.h"

#include <cstdio>

#include "compiler/jit_executable.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

std::unique_ptr<Executable> make_executable(Graph g, const BackendOptions& opts) {
  if (opts.threads < 0) {
    std::string msg = "--threads must be positive, got ";
    msg += std::to_string(opts.threads);
    throw Error(msg);
  }
  if (opts.threads > 0) kiln_set_num_threads(opts.threads);
  std::unique_ptr<Executable> exe;
  if (opts.backend == "interp") {
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
