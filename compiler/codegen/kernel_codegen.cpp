#include "compiler/codegen/kernel_codegen.h"

#include <deque>
#include <llvm/IR/Function.h>
#include <map>
#include <set>

#include "compiler/codegen/emitter_registry.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

namespace {

void collect_missing(const Graph& g, std::set<std::string>& missing) {
  for (const Node& node : g.nodes()) {
    if (node.body) collect_missing(*node.body, missing);
    else if (!node.def->side_effect && !EmitterRegistry::global().find(node.op())) missing.insert(node.op());
  }
}

// Generators of a kernel graph's values: inputs load from their argument, a node
// result composes its op's elemental generator with its operands' generators.
class Generators {
 public:
  Generators(LoweringContext& cx, const Graph& g) : cx_(cx), g_(g) {}

  // v's elements come from `gen` (a kernel op's result read back from memory).
  void set(Value v, Generator gen) { memo_[v.id] = std::move(gen); }

  const Generator& of(Value v) {
    auto it = memo_.find(v.id);
    if (it != memo_.end()) return it->second;
    const ValueInfo& info = g_.value(v);
    if (info.kind != ValueKind::result) return memo_.emplace(v.id, buffer_generator(cx_, v, info.type)).first->second;
    const Node& node = g_.producer(v);
    const OpEmitter& emitter = *EmitterRegistry::global().find(node.op());
    if (!emitter.elemental)
      throw Error("codegen: %" + info.name + " (" + node.op() + ") feeds a fused consumer but has no elemental form");
    std::vector<Generator>& operands = operand_lists_.emplace_back();
    for (Value o : node.operands) operands.push_back(of(o));
    const ElementalFn& fn = emitter.elemental;
    LoweringContext& cx = cx_;
    const NodeRef ref{g_, node};
    Generator gen = [&cx, ref, &operands, &fn](const ElementIndex& index) {
      return fn(ElementalArgs{cx, ref, operands}, index);
    };
    return memo_.emplace(v.id, std::move(gen)).first->second;
  }

 private:
  LoweringContext& cx_;
  const Graph& g_;
  std::map<int32_t, Generator> memo_;
  std::deque<std::vector<Generator>> operand_lists_;  // stable: generators hold references
};

void emit_body(LoweringContext& cx, const Graph& k, const std::string& symbol) {
  std::vector<const Node*> heroes;
  for (const Node& node : k.nodes())
    if (EmitterRegistry::global().find(node.op())->kernel) heroes.push_back(&node);
  Generators gens(cx, k);
  if (heroes.empty()) {
    const Shape shape = k.type(k.outputs().front()).shape;
    std::vector<LoopOutput> outputs;
    for (Value v : k.outputs()) {
      if (!(k.type(v).shape == shape))
        throw Error("codegen: loop kernel outputs differ in shape: " + shape_str(shape) + " and " +
                    shape_str(k.type(v).shape));
      outputs.push_back({v, k.type(v).dtype, gens.of(v)});
    }
    emit_elemental_loop(cx, symbol + ".loop", shape, outputs);
    return;
  }
  const Node& hero = *heroes.front();
  const OpEmitter& emitter = *EmitterRegistry::global().find(hero.op());
  const Value out = k.outputs().front();
  const bool outputs_are_hero = k.outputs() == hero.results;
  const bool epilogue = !outputs_are_hero && emitter.epilogue && k.outputs().size() == 1 && hero.results.size() == 1 &&
                        k.type(out) == k.type(hero.results[0]);
  if (heroes.size() > 1 || !(outputs_are_hero || epilogue))
    throw Error("codegen: kernel @" + k.name() + " has " + std::to_string(heroes.size()) +
                " non-elemental op(s) and outputs other than their results; no kernel shape fits");
  std::vector<Generator> operands;
  for (Value v : hero.operands) operands.push_back(gens.of(v));
  if (!epilogue) {
    emitter.kernel(KernelEmitArgs{cx, NodeRef{k, hero}, operands});
    return;
  }
  // The hero writes into the output's buffer; the epilogue reads it back there.
  gens.set(hero.results[0], buffer_generator(cx, out, k.type(out)));
  const Epilogue e{out, gens.of(out)};
  emitter.kernel(KernelEmitArgs{cx, NodeRef{k, hero}, operands, &e});
}

}  // namespace

void check_lowerable(const Graph& g) {
  register_all_emitters();
  std::set<std::string> missing;
  collect_missing(g, missing);
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

llvm::Function* emit_kernel(LoweringContext& cx, const Graph& k, const std::string& symbol) {
  check_lowerable(k);
  if (k.outputs().empty()) throw Error("codegen: kernel @" + k.name() + " has no outputs");
  std::map<int32_t, size_t> slots;
  size_t next = 0;
  for (Value v : k.declarations()) slots[v.id] = next++;
  for (Value v : k.outputs()) {
    if (k.value(v).kind != ValueKind::result || slots.count(v.id))
      throw Error("codegen: kernel @" + k.name() + " outputs %" + k.name_of(v) + " that it does not compute once");
    slots[v.id] = next++;
  }
  cx.set_slots(std::move(slots), next);
  llvm::Function* f = cx.define_function(symbol, {}, [&](llvm::Function* fn) {
    fn->getArg(0)->setName("args");
    emit_body(cx, k, symbol);
  });
  if (f->getName() != symbol) throw Error("codegen: two kernels named " + symbol + " in one module");
  f->setLinkage(llvm::Function::ExternalLinkage);
  return f;
}

}  // namespace kiln::compiler
