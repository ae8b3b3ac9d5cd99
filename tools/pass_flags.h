#pragma once
// The pass pipeline's flags (--passes, --print-after-all, --print-after,
// --print-before, --time-passes, --verify-each), shared by every subcommand that
// runs the passes (opt; later run, compile, train).
#include <string>

#include "compiler/backend.h"
#include "compiler/passes/pass_manager.h"
#include "compiler/pipeline.h"
#include "compiler/jit/jit_engine.h"

namespace CLI {
class App;
}

namespace kiln::cli {

// --precision f32|bf16 (PassOptions::precision).
void add_precision_flag(CLI::App* sub, DType& precision);

// Adds the flags (--precision too) to `sub`, filling `opts`; an unknown pass name is a flag error
// naming it and the known passes. Dumps and timing go to stderr. The footer of
// `sub`'s help lists the passes with their descriptions.
void add_pass_flags(CLI::App* sub, compiler::PassOptions& opts);

// --dump-dir DIR (compiler/dump_dir.h), checked as a directory kiln can write in or create.
void add_dump_dir_flag(CLI::App* sub, std::string& dir);

// The pass flags plus the compiler's reports and switches, for the subcommands
// that compile (run, compile, train): --print-memory-plan, --no-reuse,
// --dump-dir, and (given `kernels`) --no-cache. Reports go to stderr.
void add_compiler_flags(CLI::App* sub, compiler::PipelineOptions& pipeline,
                        compiler::KernelJitOptions* kernels = nullptr);

// --backend, --threads and --check-numerics, for the subcommands that run graphs
// (run, train, eval, translate).
void add_backend_flags(CLI::App& sub, compiler::BackendOptions& exec);

}  // namespace kiln::cli
