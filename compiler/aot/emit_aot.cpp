#include "compiler/aot/emit_aot.h"

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/aot/aot_interface.h"
#include "compiler/aot/c_header.h"
#include "compiler/aot/typed_entry.h"
#include "compiler/codegen/lower_program.h"
#include "compiler/jit/optimize.h"
#include "compiler/pipeline.h"

namespace kiln::compiler {

AotFiles emit_aot(const Graph& g, const Target& target, const std::string& prefix, CompileTimes* times,
                  const PipelineOptions& pipeline) {
  CompileTimes local;
  CompileTimes& t = times ? *times : local;
  PipelineOptions options = pipeline;
  options.update_in_place = false;  // the interface keeps params and state read-only (new_NAME fields)
  options.invariants = false;       // the entry runs every call: no state of its own between calls
  const CompiledGraph compiled = compile_graph(g, options);
  t.passes_ms += compiled.passes_ms;
  const AotInterface api = aot_interface(compiled.graph, compiled.program, prefix);
  LoweredProgram lowered = lower_program(compiled.program, target);
  t.lower_ms += lowered.lower_ms;
  add_typed_entry(lowered, compiled.graph, api, target);
  const std::unique_ptr<llvm::TargetMachine> tm = make_target_machine(target);
  optimize_module(*lowered.module, *tm);
  return {module_code(*lowered.module, *tm, ModuleCode::object), c_header(compiled.graph, api, target)};
}

}  // namespace kiln::compiler
