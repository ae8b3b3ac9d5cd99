#include "compiler/codegen/kernel_codegen.h"

#include <algorithm>
#include <deque>
#include <llvm/IR/Function.h>
#include <map>
#include <set>

#include "compiler/codegen/emitter_registry.h"
#include "compiler/codegen/line_fold.h"
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

  // Makes `gen` the generator of v (a value the kernel computes another way).
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

// The row kernel (see kernel_codegen.h): per row of the outputs' shape, each
// reduction folds its operand's row into a scalar, then every output's row is
// computed with those scalars standing for the reductions' results.
void emit_row_kernel(LoweringContext& cx, const Graph& k, const std::string& symbol,
                     const std::vector<const Node*>& reductions, const Shape& shape) {
  using namespace line_fold;
  const int64_t n = shape.back();
  const Shape rows_shape(shape.begin(), shape.end() - 1);
  const int lane_axis = static_cast<int>(shape.size()) - 1;
  const auto work = static_cast<int64_t>(reductions.size() + k.outputs().size());
  cx.parallel_for(symbol + ".rows", numel(rows_shape), LoweringContext::grain_for(n * work),
                  [&](llvm::Value* begin, llvm::Value* end) {
    cx.for_range(begin, end, 1, [&](llvm::Value* row) {
      const std::vector<llvm::Value*> row_dims = unflatten(cx, row, rows_shape);
      const auto index = [&](llvm::Value* j, int w) {
        std::vector<llvm::Value*> dims = row_dims;
        dims.push_back(j);
        return ElementIndex{dims, w, w > 1 ? lane_axis : -1};
      };
      Generators gens(cx, k);
      for (const Node* r : reductions) {
        const Fold fold = r->op() == "max" ? Fold::max : Fold::sum;
        const Generator& in = gens.of(r->operands[0]);
        llvm::Value* total = fold_line(cx, n, {fold}, [&](llvm::Value* j, int w, const Carried& acc) {
          return Carried{combine(cx, fold, acc[0], in(index(j, w)))};
        })[0];
        if (r->op() == "mean") total = cx.b().CreateFDiv(total, cx.f32c(static_cast<float>(n)));
        gens.set(r->results[0], [&cx, total](const ElementIndex& i) { return cx.splat(total, i.width); });
      }
      llvm::Value* row_offset = cx.b().CreateMul(row, cx.i64c(n), "", true, true);
      fold_line(cx, n, {}, [&](llvm::Value* j, int w, const Carried&) {
        std::vector<llvm::Value*> values;
        for (Value o : k.outputs()) values.push_back(gens.of(o)(index(j, w)));
        llvm::Value* at = cx.b().CreateAdd(row_offset, j, "", true, true);
        for (size_t i = 0; i < values.size(); ++i) cx.store(k.type(k.outputs()[i]).dtype, cx.buffer(k.outputs()[i]), at, values[i]);
        return Carried{};
      });
    });
  });
}

void emit_body(LoweringContext& cx, const Graph& k, const std::string& symbol) {
  std::vector<const Node*> heroes;
  for (const Node& node : k.nodes())
    if (EmitterRegistry::global().find(node.op())->kernel) heroes.push_back(&node);
  Generators gens(cx, k);
  const Shape& shape = k.type(k.outputs().front()).shape;
  if (!heroes.empty() && std::all_of(heroes.begin(), heroes.end(), [&](const Node* h) {
        return is_row_reduction_of(k, *h, shape);
      })) {
    for (Value v : k.outputs())
      if (!(k.type(v).shape == shape) || k.value(v).kind != ValueKind::result ||
          !EmitterRegistry::global().find(k.producer(v).op())->elemental)
        throw Error("codegen: row kernel @" + k.name() + " outputs %" + k.name_of(v) + ", not an elemental value of " +
                    shape_str(shape));
    emit_row_kernel(cx, k, symbol, heroes, shape);
    return;
  }
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
  const bool outputs_are_hero = k.outputs() == hero.results;
  if (heroes.size() > 1 || !outputs_are_hero)
    throw Error("codegen: kernel @" + k.name() + " has " + std::to_string(heroes.size()) +
                " non-elemental op(s) and outputs other than their results; no kernel shape fits");
  std::vector<Generator> operands;
  for (Value v : hero.operands) operands.push_back(gens.of(v));
  EmitterRegistry::global().find(hero.op())->kernel(KernelEmitArgs{cx, NodeRef{k, hero}, operands});
}

}  // namespace

bool is_row_reduction_of(const Graph& g, const Node& n, const Shape& shape) {
  if (n.op() != "sum" && n.op() != "mean" && n.op() != "max") return false;
  const TensorType& in = g.type(n.operands[0]);
  if (in.dtype != DType::f32 || !(in.shape == shape) || shape.empty() || shape.back() == 0) return false;
  if (!n.attrs.get_bool("keepdims")) return false;
  const std::vector<int64_t>& axes = n.attrs.get_ints("axes");
  const auto rank = static_cast<int64_t>(shape.size());
  return axes.size() == 1 && normalize_axis(axes[0], rank) == rank - 1;
}

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
