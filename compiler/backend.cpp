#include "compiler/backend.h"

#include <cstdio>

#include "compiler/jit_executable.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

std::unique_ptr<Executable> make_executable(Graph g, const BackendOptions& opts) {
  if (opts.threads < 0) throw Error("--threads must be positive, got " + std::to_string(opts.threads));
  if (opts.threads > 0) kiln_set_num_threads(opts.threads);
  if (opts.backend == "interp") return std::make_unique<Interpreter>(std::move(g));
  if (opts.backend != "jit") throw Error("unknown backend '" + opts.backend + "' (expected jit or interp)");
  auto jit = std::make_unique<JitExecutable>(std::move(g), JitOptions{opts.target_cpu});
  if (opts.time_passes) {
    const CompileTimes& t = jit->compile_times();
    std::fprintf(stderr,
                 "time-passes (%s, %s, %d f32 lanes):\n  lower     %8.2f ms\n  optimize  %8.2f ms\n"
                 "  codegen   %8.2f ms\n  total     %8.2f ms\n",
                 jit->target().cpu.c_str(), jit->target().triple.c_str(), jit->target().vector_width, t.lower_ms,
                 t.optimize_ms, t.codegen_ms, t.lower_ms + t.optimize_ms + t.codegen_ms);
  }
  return jit;
}

}  // namespace kiln::compiler
