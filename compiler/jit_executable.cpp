#include "compiler/jit_executable.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/codegen/lower_graph.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

JitExecutable::JitExecutable(Graph graph, const JitOptions& options) : Executable(std::move(graph)) {
  const Target target = detect_target(options.target_cpu);
  LoweredGraph lowered = lower_graph(graph_, target);
  times_.lower_ms = lowered.lower_ms;
  engine_ = std::make_unique<JitEngine>(target);
  entry_ = reinterpret_cast<void (*)(void**)>(
      engine_->compile(std::move(lowered.module), std::move(lowered.context), lowered.entry, times_));
  results_.resize(graph_.num_values());
  for (const Node& node : graph_.nodes())
    for (Value r : node.results) results_[static_cast<size_t>(r.id)] = Tensor::zeros(graph_.type(r));
}

JitExecutable::~JitExecutable() = default;

// Generated code only records what went wrong; the interpreter, run on the same
// bindings, says exactly where and with which value (the same message as with
// --backend interp). Errors are rare, so the cost is no concern.
void JitExecutable::throw_run_error(int32_t status) const {
  Interpreter reference(graph_);
  for (const auto& [name, t] : bound_) reference.bind(name, t);
  reference.run();
  throw Error(kiln_error_message(status));
}

void JitExecutable::execute(std::map<std::string, Tensor>& outputs, std::map<std::string, Tensor>& assigned) {
  const auto tensor_of = [&](Value v) -> Tensor& {
    const ValueInfo& info = graph_.value(v);
    return info.kind == ValueKind::result ? results_[static_cast<size_t>(v.id)] : bound_.at(info.name);
  };
  int32_t status = KILN_OK;
  std::vector<void*> buffers(graph_.num_values() + 1);
  for (size_t id = 0; id < graph_.num_values(); ++id) buffers[id] = tensor_of(Value{static_cast<int32_t>(id)}).data();
  buffers.back() = &status;
  entry_(buffers.data());
  if (status != KILN_OK) throw_run_error(status);
  for (const Node& node : graph_.nodes())
    if (node.def->side_effect)
      assigned.insert_or_assign(graph_.name_of(node.operands[0]), tensor_of(node.operands[1]));
  for (Value v : graph_.outputs()) outputs.insert_or_assign(graph_.name_of(v), tensor_of(v));
}

}  // namespace kiln::compiler
