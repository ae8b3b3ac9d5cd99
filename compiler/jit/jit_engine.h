#pragma once
// An ORC LLJIT for one target: takes a lowered module, optimizes it at O3, compiles
// it to machine code in this process and returns the address of its entry point.
// The runtime's C functions (compiler/runtime/kiln_runtime.h) are made visible to
// the JIT'd code; libm functions (powf) resolve from the process.
#include <memory>
#include <string>

#include "compiler/jit/target.h"

namespace llvm {
class LLVMContext;
class Module;
namespace orc {
class LLJIT;
}
}  // namespace llvm

namespace kiln::compiler {

// Milliseconds per stage, for --time-passes.
struct CompileTimes {
  double lower_ms = 0;     // Graph -> LLVM IR (filled by the caller)
  double optimize_ms = 0;  // the O3 pipeline
  double codegen_ms = 0;   // instruction selection, register allocation, linking
};

// The --time-passes table: one line per stage and the total, in ms.
std::string time_passes_report(const CompileTimes& times, const Target& target);

class JitEngine {
 public:
  explicit JitEngine(const Target& target);
  ~JitEngine();
  JitEngine(const JitEngine&) = delete;
  JitEngine& operator=(const JitEngine&) = delete;

  const Target& target() const { return target_; }

  // Optimizes and compiles `module` (owned with its context from here on) and
  // returns the address of the function named `entry`. Adds the optimize and
  // codegen times to `times`. Throws kiln::Error.
  void* compile(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                const std::string& entry, CompileTimes& times);

 private:
  Target target_;
  std::unique_ptr<llvm::orc::LLJIT> jit_;
};

}  // namespace kiln::compiler
