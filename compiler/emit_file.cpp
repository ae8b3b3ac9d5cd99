#include "compiler/emit_file.h"

#include <chrono>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/jit/optimize.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

EmitKind parse_emit_kind(const std::string& name) {
  if (name == "llvm") return EmitKind::llvm;
  if (name == "asm") return EmitKind::assembly;
  if (name == "obj") return EmitKind::object;
  throw Error("unknown --emit kind '" + name + "' (expected llvm, asm or obj)");
}

std::string emit_graph(const Graph& g, const Target& target, EmitKind kind, const std::string& entry,
                       CompileTimes* times) {
  CompileTimes local;
  CompileTimes& t = times ? *times : local;
  LoweredGraph lowered = lower_graph(g, target, entry);
  t.lower_ms += lowered.lower_ms;
  return emit_module(lowered, target, kind, t);
}

std::string emit_module(LoweredGraph& lowered, const Target& target, EmitKind kind, CompileTimes& t) {
  const std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target);

  auto start = std::chrono::steady_clock::now();
  optimize_module(*lowered.module, *tm);
  t.optimize_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  start = std::chrono::steady_clock::now();
  std::string out;
  llvm::raw_string_ostream os(out);
  if (kind == EmitKind::llvm) {
    lowered.module->print(os, nullptr);
  } else {
    llvm::SmallVector<char, 0> buffer;
    llvm::raw_svector_ostream svs(buffer);
    llvm::legacy::PassManager pm;
    const auto file_type = kind == EmitKind::object ? llvm::CodeGenFileType::ObjectFile
                                                    : llvm::CodeGenFileType::AssemblyFile;
    if (tm->addPassesToEmitFile(pm, svs, nullptr, file_type))
      throw Error("jit: the target cannot emit this kind of file");
    pm.run(*lowered.module);
    os << llvm::StringRef(buffer.data(), buffer.size());
  }
  t.codegen_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kiln::compiler
