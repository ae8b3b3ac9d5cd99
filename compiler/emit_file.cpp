#include "compiler/emit_file.h"

#include <chrono>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
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
  std::string out = module_code(*lowered.module, *tm,
                                kind == EmitKind::llvm       ? ModuleCode::llvm
                                : kind == EmitKind::assembly ? ModuleCode::assembly
                                                             : ModuleCode::object);
  t.codegen_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kiln::compiler
