#pragma once
// The new PassManager's O3 pipeline, tuned for a target machine. The JIT and
// `kiln compile` run it on every module before code generation. Sets the module's
// triple and data layout from `tm` first.
namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace kiln::compiler {

void optimize_module(llvm::Module& module, llvm::TargetMachine& tm);

}  // namespace kiln::compiler
