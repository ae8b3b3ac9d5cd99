#include "compiler/codegen/lower_graph.h"

#include <chrono>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>
#include <set>

#include "compiler/codegen/emitter_registry.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

LoweredGraph::LoweredGraph() = default;
LoweredGraph::LoweredGraph(LoweredGraph&&) noexcept = default;
LoweredGraph::~LoweredGraph() {
  module.reset();  // before its context
}

void check_lowerable(const Graph& g) {
  register_all_emitters();
  std::set<std::string> missing;
  for (const Node& node : g.nodes())
    if (!node.def->side_effect && !EmitterRegistry::global().find(node.op())) missing.insert(node.op());
  if (missing.empty()) return;
  std::string msg = "jit: no lowering for op ";
  bool first = true;
  for (const std::string& op : missing) {
    if (!first) msg += ", ";
    msg += '\'';
    msg += op;
    msg += '\'';
    first = false;
  }
  throw Error(msg);
}

namespace {

// One node's kernel, `void kN_op(ptr buffers)`, emitted with its op's emitter.
llvm::Function* emit_node(LoweringContext& cx, const Graph& g, const Node& node, size_t index) {
  const OpEmitter& emitter = *EmitterRegistry::global().find(node.op());
  const NodeRef ref{g, node};
  std::string name = "k";
  name += std::to_string(index);
  name += '_';
  name += node.op();
  return cx.define_function(name, {}, [&](llvm::Function*) {
    std::vector<Generator> operands;
    for (Value v : node.operands) operands.push_back(buffer_generator(cx, v, g.type(v)));
    if (emitter.kernel) {
      emitter.kernel(KernelEmitArgs{cx, ref, operands});
      return;
    }
    const ElementalArgs args{cx, ref, operands};
    const ElementalFn& fn = emitter.elemental;
    emit_elemental_loop(cx, name + ".rows", node.results[0], ref.out(),
                        [&](const ElementIndex& index) { return fn(args, index); });
  });
}

}  // namespace

LoweredGraph lower_graph(const Graph& g, const Target& target, const std::string& entry) {
  const auto start = std::chrono::steady_clock::now();
  check_lowerable(g);
  LoweredGraph out;
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>("kiln." + g.name(), *out.context);
  out.module->setTargetTriple(target.triple);
  out.entry = entry;
  LoweringContext cx(*out.module, target, g.num_values());

  std::vector<llvm::Function*> kernels;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& node = g.nodes()[i];
    if (node.def->side_effect) continue;  // assign: the caller commits it
    kernels.push_back(emit_node(cx, g, node, i));
  }
  llvm::Function* main = cx.define_function(entry, {}, [&](llvm::Function* f) {
    f->getArg(0)->setName("buffers");
    for (llvm::Function* k : kernels) cx.b().CreateCall(k, {f->getArg(0)});
  });
  main->setLinkage(llvm::Function::ExternalLinkage);

  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*out.module, &os)) throw Error("jit: generated invalid LLVM IR: " + problems);
  out.lower_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace kiln::compiler
