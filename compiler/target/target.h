#pragma once
// The CPU that code is generated for: the host by default (name and features from
// LLVM, so AVX-512 is used where the machine has it), or a named CPU.
#include <memory>
#include <string>

namespace llvm {
class TargetMachine;
}

namespace kiln::compiler {

struct Target {
  std::string triple;    // e.g. "x86_64-pc-linux-gnu"
  std::string cpu;       // e.g. "znver4", "skylake-avx512"
  std::string features;  // "+avx2,+fma,..." (empty: those implied by `cpu`)
  // f32 lanes of the vector types codegen uses: 16 with avx512f, 8 with avx, else 4.
  int vector_width = 4;
  // avx512_bf16 with 16 lanes on a CPU where vdpbf16ps (two bf16 products
  // summed into each f32 lane) outruns f32 FMAs (AMD's Zen 4 and 5, not Intel's):
  // GEMMs of bf16 operands use it; otherwise they widen bf16 to f32 as they load.
  bool bf16_dot = false;
};

// The host, or `cpu_override` (features then follow from the CPU name). Throws
// kiln::Error if LLVM does not know the CPU.
Target detect_target(const std::string& cpu_override = {});

// A TargetMachine for `t` at CodeGenOptLevel::Aggressive; throws kiln::Error.
std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& t);

// Registers LLVM's native target, asm printer and parser (once).
void initialize_llvm_native_target();

}  // namespace kiln::compiler
