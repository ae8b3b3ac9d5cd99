#include "compiler/jit/optimize.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "engine/ir/error.h"

namespace kiln::compiler {

OptLevel opt_level_for(FusionKind kind) {
  return kind == FusionKind::loop || kind == FusionKind::horizontal ? OptLevel::O2 : OptLevel::O3;
}

void optimize_module(llvm::Module& module, llvm::TargetMachine& tm, OptLevel level) {
  module.setTargetTriple(tm.getTargetTriple().str());
  module.setDataLayout(tm.createDataLayout());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  const llvm::OptimizationLevel llvm_level = level == OptLevel::O1   ? llvm::OptimizationLevel::O1
                                             : level == OptLevel::O2 ? llvm::OptimizationLevel::O2
                                                                     : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm_level);
  mpm.run(module, mam);
}

std::string module_code(llvm::Module& module, llvm::TargetMachine& tm, ModuleCode form) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (form == ModuleCode::llvm) {
    module.print(os, nullptr);
    return out;
  }
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream svs(buffer);
  llvm::legacy::PassManager pm;
  const auto file_type =
      form == ModuleCode::object ? llvm::CodeGenFileType::ObjectFile : llvm::CodeGenFileType::AssemblyFile;
  if (tm.addPassesToEmitFile(pm, svs, nullptr, file_type)) throw Error("jit: the target cannot emit this kind of file");
  pm.run(module);
  os << llvm::StringRef(buffer.data(), buffer.size());
  return out;
}

}  // namespace kiln::compiler
