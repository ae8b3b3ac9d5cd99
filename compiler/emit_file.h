#pragma once
// Ahead-of-time output of a graph, for `kiln compile --emit` and AOT builds: the
// program the JIT runs (same pipeline, kernels and target) as one module with an
// entry function (codegen/lower_program.h), O3-optimized, as LLVM IR text,
// assembly or an ELF object, or the program itself as text. The code calls
// kiln_parallel_for from compiler/runtime/kiln_runtime.h, which the linking
// program provides.
#include <string>

#include "compiler/jit/jit_engine.h"
#include "compiler/target/target.h"
#include "compiler/pipeline.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

enum class EmitKind { llvm, assembly, object, program };

// "llvm" | "asm" | "obj" | "program"; throws kiln::Error naming the choices otherwise.
EmitKind parse_emit_kind(const std::string& name);

// The file's contents (text for llvm, asm and program, bytes for obj). The entry
// function is named `entry`. Adds the stage times to `times` if given. Throws
// kiln::Error.
std::string emit_graph(const Graph& g, const Target& target, EmitKind kind, const std::string& entry = "kiln_main",
                       CompileTimes* times = nullptr, const PipelineOptions& pipeline = {});

}  // namespace kiln::compiler
