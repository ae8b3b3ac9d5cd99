#include "compiler/target/target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Host.h>
#include <mutex>

#include "engine/ir/error.h"

namespace kiln::compiler {

void initialize_llvm_native_target() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

namespace {

const llvm::Target& lookup_target(const std::string& triple) {
  initialize_llvm_native_target();
  std::string error;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!t) throw Error("jit: no LLVM target for " + triple + ": " + error);
  return *t;
}

std::string host_features() {
  std::string features;
  for (const auto& feature : llvm::sys::getHostCPUFeatures()) {
    if (!features.empty()) features += ',';
    features += feature.getValue() ? '+' : '-';
    features += feature.getKey().str();
  }
  return features;
}

// Whether vdpbf16ps (two bf16 products summed into each f32 lane) outruns f32
// FMAs on bf16 operands widened as packed. On Zen 4 and 5 it does (their
// 512-bit FMAs run as two halves; the GEMMs of bf16 operands reached 140-215
// GFLOP/s a core against f32's 115). On Intel's Sapphire Rapids it runs at
// about half the FMAs' rate (`kiln bench --op matmul --precision bf16`: the
// small step's products at 63-85 GFLOP/s, widened 85-148), so Intel widens.
bool dot_outruns_fma(const std::string& cpu) { return cpu.rfind("znver", 0) == 0; }

int vector_width_of(const llvm::MCSubtargetInfo& sti) {
  if (sti.checkFeatures("+avx512f")) return 16;
  if (sti.checkFeatures("+avx")) return 8;
  return 4;
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> make_target_machine(const Target& t) {
  const llvm::Target& target = lookup_target(t.triple);
  llvm::TargetOptions options;
  std::unique_ptr<llvm::TargetMachine> tm(target.createTargetMachine(
      t.triple, t.cpu, t.features, options, llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw Error("jit: cannot create a target machine for " + t.triple + " cpu " + t.cpu);
  return tm;
}

Target detect_target(const std::string& cpu_override) {
  Target t;
  t.triple = llvm::sys::getProcessTriple();
  if (cpu_override.empty()) {
    t.cpu = llvm::sys::getHostCPUName().str();
    t.features = host_features();
  } else {
    t.cpu = cpu_override;
    const std::unique_ptr<llvm::MCSubtargetInfo> generic(lookup_target(t.triple).createMCSubtargetInfo(t.triple, "", ""));
    if (!generic->isCPUStringValid(t.cpu)) throw Error("unknown target CPU '" + t.cpu + "' (see llc -mcpu=help)");
  }
  const std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(t);
  t.vector_width = vector_width_of(*tm->getMCSubtargetInfo());
  t.bf16_dot = t.vector_width == 16 && tm->getMCSubtargetInfo()->checkFeatures("+avx512bf16") &&
               dot_outruns_fma(t.cpu);
  return t;
}

}  // namespace kiln::compiler
