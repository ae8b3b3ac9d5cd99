#include "compiler/codegen/kernel_codegen.h"

#include <algorithm>
#include <deque>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "compiler/codegen/concat_copies.h"
#include "compiler/codegen/emitter_registry.h"
#include "compiler/codegen/line_fold.h"
#include "engine/fnv1a.h"
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
    return memo_.emplace(v.id, reusing(std::move(gen))).first->second;
  }

 private:
  // `gen` returning the value it already emitted for the same index where that
  // value is still in scope (XLA's generator cache). Without it a value used
  // twice in a fusion is emitted twice, and so is everything under it: a DAG of
  // shared values grows into a tree whose size is exponential in its depth.
  Generator reusing(Generator gen) {
    using Key = std::tuple<std::vector<llvm::Value*>, int, int>;
    auto emitted = std::make_shared<std::map<Key, llvm::Value*>>();
    LoweringContext& cx = cx_;
    return [gen = std::move(gen), emitted, &cx](const ElementIndex& index) {
      const Key key{index.dims, index.width, index.lane_axis};
      if (const auto it = emitted->find(key); it != emitted->end() && in_scope(cx.b(), it->second)) return it->second;
      llvm::Value* v = gen(index);
      (*emitted)[key] = v;
      return v;
    };
  }

  // Whether v may be used at the builder's position: a constant or argument, or an
  // instruction earlier in the same block (uses in other blocks are not reused).
  static bool in_scope(llvm::IRBuilder<>& b, llvm::Value* v) {
    const auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
    if (!inst) return true;
    if (inst->getParent() != b.GetInsertBlock()) return false;
    return b.GetInsertPoint() == b.GetInsertBlock()->end() || inst->comesBefore(&*b.GetInsertPoint());
  }


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

// loop: one loop over the outputs' common shape, each output's generator
// composed from its producers'; a lone concat copies its operands instead.
void emit_loop(LoweringContext& cx, const Graph& k, const std::string& symbol) {
  if (is_lone_concat(k)) {
    emit_concat_copies(cx, k, symbol);
    return;
  }
  Generators gens(cx, k);
  const Shape shape = k.type(k.outputs().front()).shape;
  std::vector<LoopOutput> outputs;
  for (Value v : k.outputs()) outputs.push_back({v, k.type(v).dtype, gens.of(v)});
  emit_elemental_loop(cx, symbol + ".loop", shape, outputs);
}

// row: per row of the outputs' shape (emit_row_kernel), its reductions first.
void emit_row(LoweringContext& cx, const Graph& k, const FusionRoles& roles, const std::string& symbol) {
  std::vector<const Node*> reductions;
  for (int64_t r : roles.reductions) reductions.push_back(&k.nodes()[static_cast<size_t>(r)]);
  emit_row_kernel(cx, k, symbol, reductions, k.type(k.outputs().front()).shape);
}

// input: the hero's emitter, reading its operands through generators composed
// from its elemental producers; its results are the outputs. epilogue: the
// hero (an op that takes an epilogue) writes into the product's buffer and
// applies the outputs' generators there (emitter_registry.h, Epilogue).
void emit_kernel_op(LoweringContext& cx, const Graph& k, const FusionRoles& roles) {
  const Node& hero = k.nodes()[static_cast<size_t>(roles.hero)];
  const OpEmitter& emitter = *EmitterRegistry::global().find(hero.op());
  Generators gens(cx, k);
  std::vector<Generator> operands;
  for (Value v : hero.operands) operands.push_back(gens.of(v));
  if (roles.kind != FusionKind::epilogue) {
    emitter.kernel(KernelEmitArgs{cx, NodeRef{k, hero}, operands});
    return;
  }
  const Value result = hero.results[0];
  Epilogue e;
  if (roles.column_sum >= 0) e.column_sums_of_b = k.nodes()[static_cast<size_t>(roles.column_sum)].results[0];
  for (Value v : k.outputs())
    if (v != result && v != e.column_sums_of_b) e.outputs.push_back({v, k.type(v).dtype, Generator{}});
  // Stored: the outputs go to buffers of their own; else the one output's buffer, replaced in place.
  e.product = roles.stores_product ? result : e.outputs.front().value;
  // The hero writes into the product's buffer; the epilogue reads it back there.
  gens.set(result, buffer_generator(cx, e.product, k.type(result)));
  for (Epilogue::Output& o : e.outputs) o.generator = gens.of(o.value);
  emitter.kernel(KernelEmitArgs{cx, NodeRef{k, hero}, operands, &e});
}

void emit_body(LoweringContext& cx, const Graph& k, const FusionRoles& roles, const std::string& symbol) {
  switch (roles.kind) {
    case FusionKind::loop:
      return emit_loop(cx, k, symbol);
    case FusionKind::row:
      return emit_row(cx, k, roles, symbol);
    case FusionKind::input:
    case FusionKind::epilogue:
      return emit_kernel_op(cx, k, roles);
    case FusionKind::horizontal:
      break;  // emit_kernel's: several parts
  }
  throw Error("codegen: kernel @" + k.name() + " of kind horizontal is not a kernel of one part");
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

namespace {

// "codegen: kernel @k of kind horizontal: WHY": parts that do not run side by
// side (the parser and the verifier see to it that each is a loop fusion).
[[noreturn]] void horizontal_misfit(const Graph& k, const std::string& why) {
  throw Error("codegen: kernel @" + k.name() + " of kind horizontal: " + why);
}

// The parts that compile to one function, and each one's argument slots, one
// part after another (every part of a function has the same number of slots).
struct PartFunction {
  llvm::Function* function = nullptr;
  const Graph* body = nullptr;
  size_t arity = 0;
  std::vector<uint64_t> slots;
};

// The argument slots of each part of a horizontal kernel, by node: its
// operands' input slots, then its results' output slots. Parts share only
// inputs, and each result is one output.
std::vector<std::vector<uint64_t>> part_slots(const Graph& k) {
  std::vector<int64_t> slot(k.num_values(), -1);
  for (size_t i = 0; i < k.declarations().size(); ++i) slot[static_cast<size_t>(k.declarations()[i].id)] = int64_t(i);
  std::vector<int64_t> output_slot(k.num_values(), -1);
  for (size_t j = 0; j < k.outputs().size(); ++j) {
    int64_t& o = output_slot[static_cast<size_t>(k.outputs()[j].id)];
    if (o != -1 || k.value(k.outputs()[j]).kind != ValueKind::result)
      horizontal_misfit(k, "%" + k.name_of(k.outputs()[j]) + " is not one part's result output once");
    o = static_cast<int64_t>(k.declarations().size() + j);
  }
  std::vector<std::vector<uint64_t>> slots;
  for (const Node& part : k.nodes()) {
    std::vector<uint64_t>& s = slots.emplace_back();
    for (Value v : part.operands) {
      if (slot[static_cast<size_t>(v.id)] < 0)
        horizontal_misfit(k, "a part reads %" + k.name_of(v) + ", another part's result");
      s.push_back(static_cast<uint64_t>(slot[static_cast<size_t>(v.id)]));
    }
  }
  for (size_t p = 0; p < slots.size(); ++p) {
    const Node& part = k.nodes()[p];
    std::vector<uint64_t>& s = slots[p];
    for (Value r : part.results) {
      if (output_slot[static_cast<size_t>(r.id)] < 0)
        horizontal_misfit(k, "%" + k.name_of(r) + " is not one part's result output once");
      s.push_back(static_cast<uint64_t>(output_slot[static_cast<size_t>(r.id)]));
    }
  }
  return slots;
}

// A cheap key that alike bodies share (same_computation decides).
uint64_t shape_key(const Graph& body) {
  std::string key = std::to_string(body.num_values());
  for (const Node& n : body.nodes()) key += n.op() + ' ';
  for (Value v : body.outputs()) key += type_str(body.type(v));
  return fnv1a_64(key);
}

// A horizontal kernel: its parts are loop fusions (horizontal-fusion's
// output) and each distinct body is one function, which the kernel calls in a
// loop over a constant table of its parts' argument slots. So the kernel's code
// grows with the distinct bodies, not with the parts (an optimizer's update of
// 100,000 params of three shapes is three loops). Parts share only inputs, and
// an output may share memory only with an input its own part alone reads, so
// running them grouped by function instead of in order computes the same.
llvm::Function* emit_horizontal(LoweringContext& cx, const Graph& k, const std::string& symbol) {
  const std::vector<std::vector<uint64_t>> slots = part_slots(k);
  std::vector<PartFunction> functions;
  std::map<const Graph*, size_t> by_body;
  std::multimap<uint64_t, size_t> by_key;
  for (size_t p = 0; p < k.nodes().size(); ++p) {
    const Graph& body = *k.nodes()[p].body;
    auto [at, added] = by_body.emplace(&body, functions.size());
    const uint64_t key = added ? shape_key(body) : 0;
    if (added) {
      for (auto [it, end] = by_key.equal_range(key); it != end; ++it)
        if (same_computation(*functions[it->second].body, body)) {
          at->second = it->second;
          added = false;
          break;
        }
    }
    if (added) {
      by_key.emplace(key, functions.size());
      llvm::Function* f = emit_kernel(cx, body, FusionRoles{}, symbol + ".part" + std::to_string(functions.size()));
      f->setLinkage(llvm::Function::InternalLinkage);
      functions.push_back({f, &body, slots[p].size(), {}});
    }
    std::vector<uint64_t>& table = functions[at->second].slots;
    table.insert(table.end(), slots[p].begin(), slots[p].end());
  }
  size_t widest = 0;
  for (const PartFunction& pf : functions) widest = std::max(widest, pf.arity);
  const size_t status = k.declarations().size() + k.outputs().size();
  cx.set_slots({}, status);
  return cx.define_function(symbol, {}, [&](llvm::Function* fn) {
    fn->getArg(0)->setName("args");
    auto& b = cx.b();
    llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    llvm::Value* args = entry.CreateAlloca(llvm::ArrayType::get(cx.ptr(), widest + 1), nullptr, "part.args");
    const auto arg = [&](size_t a) {
      return b.CreateConstInBoundsGEP2_64(llvm::ArrayType::get(cx.ptr(), widest + 1), args, 0, a);
    };
    for (size_t f = 0; f < functions.size(); ++f) {
      const PartFunction& pf = functions[f];
      auto* table = new llvm::GlobalVariable(
          cx.module(), llvm::ArrayType::get(cx.i64(), pf.slots.size()), true, llvm::GlobalValue::PrivateLinkage,
          llvm::ConstantDataArray::get(cx.context(), pf.slots), symbol + ".part" + std::to_string(f) + ".slots");
      b.CreateAlignedStore(cx.buffer_in_slot(cx.i64c(static_cast<int64_t>(status))), arg(pf.arity), llvm::Align(8));
      const auto parts = static_cast<int64_t>(pf.slots.size() / pf.arity);
      cx.for_range(0, parts, 1, [&](llvm::Value* p) {
        llvm::Value* first = b.CreateMul(p, cx.i64c(static_cast<int64_t>(pf.arity)), "first");
        for (size_t a = 0; a < pf.arity; ++a) {
          llvm::Value* at = b.CreateInBoundsGEP(cx.i64(), table, b.CreateAdd(first, cx.i64c(static_cast<int64_t>(a))));
          llvm::Value* slot = b.CreateAlignedLoad(cx.i64(), at, llvm::Align(8), "slot");
          b.CreateAlignedStore(cx.buffer_in_slot(slot), arg(a), llvm::Align(8));
        }
        // Not inlined: a kernel's loads of `args` are invariant within one call only
        // (load_table_entry), and this loop refills them.
        b.CreateCall(pf.function, {args})->setIsNoInline();
      });
    }
  });
}

}  // namespace

llvm::Function* emit_kernel(LoweringContext& cx, const Graph& k, const FusionRoles& roles, const std::string& symbol) {
  check_lowerable(k);
  if (k.outputs().empty()) throw Error("codegen: kernel @" + k.name() + " has no outputs");
  if (roles.kind == FusionKind::horizontal) {
    llvm::Function* f = emit_horizontal(cx, k, symbol);
    if (f->getName() != symbol) throw Error("codegen: two kernels named " + symbol + " in one module");
    f->setLinkage(llvm::Function::ExternalLinkage);
    return f;
  }
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
    emit_body(cx, k, roles, symbol);
  });
  if (f->getName() != symbol) throw Error("codegen: two kernels named " + symbol + " in one module");
  f->setLinkage(llvm::Function::ExternalLinkage);
  return f;
}

}  // namespace kiln::compiler
