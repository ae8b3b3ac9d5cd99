#pragma once
// The new PassManager's pipelines, tuned for a target machine, and which one a
// kernel gets. Explicitly vectorized loop kernels need little more than
// cleanup and scheduling; kernels with their own loop nests (GEMM, reductions,
// normalizations) profit from the full O3 pipeline. And a module's machine
// code, or its IR as text: what the JIT links, its dumps and AOT's files are.
#include <string>

#include "engine/ir/fusion_kind.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln::compiler {

enum class OptLevel { O1 = 1, O2 = 2, O3 = 3 };

// The level for a kernel of this kind (kernel_codegen.h): O2 for loops (one
// loop or several), O3 for the rest.
OptLevel opt_level_for(FusionKind kind);

// Sets the module's triple and data layout from `tm`, then runs the pipeline.
void optimize_module(llvm::Module& module, llvm::TargetMachine& tm, OptLevel level = OptLevel::O3);

enum class ModuleCode { llvm, assembly, object };

// The module as LLVM IR text, assembly, or an ELF object's bytes. Throws kiln::Error.
std::string module_code(llvm::Module& module, llvm::TargetMachine& tm, ModuleCode form);

}  // namespace kiln::compiler
