#include "compiler/emit_file.h"

#include <chrono>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/codegen/lower_program.h"
#include "compiler/jit/optimize.h"
#include "compiler/report/dump_page.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

EmitKind parse_emit_kind(const std::string& name) {
  if (name == "llvm") return EmitKind::llvm;
  if (name == "asm") return EmitKind::assembly;
  if (name == "obj") return EmitKind::object;
  if (name == "program") return EmitKind::program;
  throw Error("unknown --emit kind '" + name + "' (expected llvm, asm, obj or program)");
}

std::string emit_graph(const Graph& g, const Target& target, EmitKind kind, const std::string& entry,
                       CompileTimes* times, const PipelineOptions& pipeline) {
  CompileTimes local;
  CompileTimes& t = times ? *times : local;
  const CompiledGraph compiled = compile_graph(g, pipeline);
  t.passes_ms += compiled.passes_ms;
  if (!compiled.dump_dir.empty()) {
    dump_kernels(compiled.program, target, compiled.dump_dir);
    write_dump_page(compiled.dump_dir);
  }
  if (kind == EmitKind::program) return print_program(compiled.program);
  LoweredProgram lowered = lower_program(compiled.program, target, entry);
  t.lower_ms += lowered.lower_ms;
  const std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target);
  auto start = std::chrono::steady_clock::now();
  optimize_module(*lowered.module, *tm);
  t.optimize_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  start = std::chrono::steady_clock::now();
  std::string out = codegen_module(*lowered.module, *tm, kind);
  t.codegen_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::string codegen_module(llvm::Module& module, llvm::TargetMachine& tm, EmitKind kind) {
  std::string out;
  llvm::raw_string_ostream os(out);
  if (kind == EmitKind::llvm) {
    module.print(os, nullptr);
    return out;
  }
  if (kind == EmitKind::program) throw Error("codegen: a module is not a program");
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream svs(buffer);
  llvm::legacy::PassManager pm;
  const auto file_type =
      kind == EmitKind::object ? llvm::CodeGenFileType::ObjectFile : llvm::CodeGenFileType::AssemblyFile;
  if (tm.addPassesToEmitFile(pm, svs, nullptr, file_type)) throw Error("jit: the target cannot emit this kind of file");
  pm.run(module);
  os << llvm::StringRef(buffer.data(), buffer.size());
  return out;
}

}  // namespace kiln::compiler
