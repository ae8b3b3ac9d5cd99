#pragma once
// A whole program (schedule/program.h) as one LLVM module, for `kiln compile
// --emit` and AOT objects: every distinct kernel as kernel_codegen.h emits it,
// plus one entry function that calls them in order.
//
// Entry ABI (C):  void ENTRY(void** buffers);
//   buffers[v], for every value v of the compiled graph (Program::num_values of
//     them; ProgramBuffer::value says which buffer is which): the data of v, as
//     kernel_codegen.h describes. Inputs, params and state are only read; every
//     buffer a call writes is written once. Temps may be given ranges of one
//     arena at the memory plan's offsets (their lifetimes allow it).
//   buffers[num_values]: an int32_t status word, KILN_OK (0) on entry; kernels
//     set it to a kiln_error_code (compiler/runtime/kiln_runtime.h) on a
//     run-time error, and the run finishes.
//   Assigns emit no code: the caller reads each assign's value buffer after the
//   call and commits it to the target (after the whole step).
//   Kernels call kiln_parallel_for from the runtime; the entry is not reentrant
//   for the same buffers, but distinct buffer tables may run concurrently.
#include <memory>
#include <string>

#include "compiler/target/target.h"
#include "compiler/schedule/program.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace kiln::compiler {

struct LoweredProgram {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;  // unoptimized; belongs to `context`
  std::string entry;                     // the entry function's name
  double lower_ms = 0;
  LoweredProgram();
  LoweredProgram(LoweredProgram&&) noexcept;
  ~LoweredProgram();
};

// Throws kiln::Error.
LoweredProgram lower_program(const Program& p, const Target& target, const std::string& entry = "kiln_main");

}  // namespace kiln::compiler
