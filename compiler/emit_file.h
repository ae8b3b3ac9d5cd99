#pragma once
// Ahead-of-time output of a lowered graph, for `kiln compile --emit` and AOT
// builds: the O3-optimized module as LLVM IR text, assembly, or an ELF object.
// The code is the JIT's (same lowering, same pipeline, same target); its entry
// function follows the ABI in codegen/lower_graph.h and calls kiln_parallel_for
// from compiler/runtime/kiln_runtime.h, which the linking program provides.
#include <string>

#include "compiler/codegen/lower_graph.h"
#include "compiler/jit/jit_engine.h"
#include "compiler/jit/target.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

enum class EmitKind { llvm, assembly, object };

// "llvm" | "asm" | "obj"; throws kiln::Error naming the choices otherwise.
EmitKind parse_emit_kind(const std::string& name);

// The file's contents (text for llvm and asm, bytes for obj). The entry function
// is named `entry`. Adds the stage times to `times` if given. Throws kiln::Error.
std::string emit_graph(const Graph& g, const Target& target, EmitKind kind, const std::string& entry = "kiln_main",
                       CompileTimes* times = nullptr);

// The same for a module already lowered (and perhaps extended, as AOT adds its
// typed entry point): optimizes it at O3 for `target`, then writes it as
// `kind`.
std::string emit_module(LoweredGraph& lowered, const Target& target, EmitKind kind, CompileTimes& times);

}  // namespace kiln::compiler
