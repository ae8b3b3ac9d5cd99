#pragma once
// The new PassManager's pipelines, tuned for a target machine, and which one a
// kernel gets. Explicitly vectorized loop kernels need little more than
// cleanup and scheduling; kernels with their own loop nests (GEMM, reductions,
// normalizations) profit from the full O3 pipeline.
namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln {
class Graph;
}

namespace kiln::compiler {

enum class OptLevel { O1 = 1, O2 = 2, O3 = 3 };

// The level for a kernel graph (kernel_codegen.h): O2 for loop kernels, O3 for the rest.
OptLevel opt_level_for(const Graph& kernel);

// Sets the module's triple and data layout from `tm`, then runs the pipeline.
void optimize_module(llvm::Module& module, llvm::TargetMachine& tm, OptLevel level = OptLevel::O3);

}  // namespace kiln::compiler
