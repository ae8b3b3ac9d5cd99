#pragma once
// Ahead-of-time compilation of a graph into an object file plus its C header,
// as XLA's tfcompile and Glow's bundles do: the JIT's code (same lowering, O3
// pipeline and target) behind a typed entry point, PREFIX_run, that a C program
// calls with no dependency beyond kiln's tiny C runtime
// (compiler/runtime/kiln_runtime_aot.c) and libm.
#include <string>

#include "compiler/jit/jit_engine.h"
#include "compiler/target/target.h"
#include "compiler/pipeline.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

struct AotFiles {
  std::string object;  // ELF bytes
  std::string header;  // C text
};

// `prefix` names the C API (PREFIX_run, struct PREFIX_args, PREFIX_* constants;
// aot_interface.h). Adds the stage times to `times` if given. Throws
// kiln::Error.
AotFiles emit_aot(const Graph& g, const Target& target, const std::string& prefix, CompileTimes* times = nullptr,
                  const PipelineOptions& pipeline = {});

}  // namespace kiln::compiler
