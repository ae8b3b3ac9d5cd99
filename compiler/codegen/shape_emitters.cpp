// Elemental generators for ops/shape_ops.cpp and ops/identity.cpp: each maps a
// result index to an operand index, so a fusion reads through them for free.
#include <algorithm>

#include "compiler/codegen/families.h"
#include "engine/ir/shape.h"

namespace kiln::compiler {

namespace {

llvm::Value* pass_through(const ElementalArgs& a, const ElementIndex& index) { return a.operands[0](index); }

llvm::Value* broadcast(const ElementalArgs& a, const ElementIndex& index) {
  return a.operands[0](broadcast_index(a.cx, index, a.node.out().shape, a.node.in(0).shape));
}

// Same elements, new shape: through the flat offset. The lanes stay on one operand
// row when every result row lies inside one operand row (operand rows a multiple
// of result rows); otherwise each lane is computed on its own.
llvm::Value* reshape(const ElementalArgs& a, const ElementIndex& index) {
  const Shape& out = a.node.out().shape;
  const Shape& in = a.node.in(0).shape;
  const auto to_operand = [&](const ElementIndex& i, int lane_axis) {
    return ElementIndex{unflatten(a.cx, flat_offset(a.cx, i.dims, out), in), i.width, lane_axis};
  };
  const bool rows_nest = !in.empty() && !out.empty() && in.back() % out.back() == 0;
  if (index.width > 1 && index.lane_axis == static_cast<int>(out.size()) - 1 && rows_nest)
    return a.operands[0](to_operand(index, static_cast<int>(in.size()) - 1));
  return per_lane(a.cx, index, [&](const ElementIndex& one) { return a.operands[0](to_operand(one, -1)); });
}

// Result axis i is operand axis perm[i]; the lanes follow their axis (the operand
// generator loads per lane if that is not the operand's innermost).
llvm::Value* transpose(const ElementalArgs& a, const ElementIndex& index) {
  const std::vector<int64_t>& perm = a.node.attrs().get_ints("perm");
  ElementIndex in{std::vector<llvm::Value*>(perm.size()), index.width, -1};
  for (size_t i = 0; i < perm.size(); ++i) in.dims[static_cast<size_t>(perm[i])] = index.dims[i];
  if (index.lane_axis >= 0) in.lane_axis = static_cast<int>(perm[static_cast<size_t>(index.lane_axis)]);
  return a.operands[0](in);
}

// The first operand element each result axis starts at (Python slice bounds, as
// ops/shape_ops.cpp resolves them; inference has already rejected bad ones).
std::vector<int64_t> slice_starts(const NodeRef& node) {
  const Shape& in = node.in(0).shape;
  std::vector<int64_t> starts(in.size(), 0);
  const auto& axes = node.attrs().get_ints("axes");
  const auto& begin = node.attrs().get_ints("starts");
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto axis = static_cast<size_t>(normalize_axis(axes[i], static_cast<int64_t>(in.size())));
    const int64_t start = begin[i] < 0 ? begin[i] + in[axis] : begin[i];
    starts[axis] = std::clamp(start, int64_t{0}, in[axis]);
  }
  return starts;
}

llvm::Value* slice(const ElementalArgs& a, const ElementIndex& index) {
  const std::vector<int64_t> starts = slice_starts(a.node);
  ElementIndex in = index;
  for (size_t k = 0; k < starts.size(); ++k)
    if (starts[k] != 0) in.dims[k] = a.cx.b().CreateAdd(in.dims[k], a.cx.i64c(starts[k]), "", true, true);
  return a.operands[0](in);
}

// Branches on the index along the concat axis to the operand that holds it. Lanes
// along the concat axis could straddle two operands, so they go one by one.
llvm::Value* concat(const ElementalArgs& a, const ElementIndex& index) {
  LoweringContext& cx = a.cx;
  const auto axis = static_cast<size_t>(normalize_axis(a.node.attrs().get_int("axis"), a.node.out().rank()));
  if (index.width > 1 && index.lane_axis == static_cast<int>(axis))
    return per_lane(cx, index, [&](const ElementIndex& one) { return concat(a, one); });
  auto& b = cx.b();
  llvm::Function* f = b.GetInsertBlock()->getParent();
  auto* done = llvm::BasicBlock::Create(cx.context(), "concat.done", f);
  std::vector<std::pair<llvm::Value*, llvm::BasicBlock*>> incoming;
  int64_t offset = 0;
  for (size_t i = 0; i < a.operands.size(); ++i) {
    const int64_t len = a.node.in(i).shape[axis];
    const bool last = i + 1 == a.operands.size();
    llvm::BasicBlock* next = nullptr;
    if (!last) {
      auto* here = llvm::BasicBlock::Create(cx.context(), "concat.part", f);
      next = llvm::BasicBlock::Create(cx.context(), "concat.next", f);
      b.CreateCondBr(b.CreateICmpSLT(index.dims[axis], cx.i64c(offset + len)), here, next);
      b.SetInsertPoint(here);
    }
    ElementIndex in = index;
    in.dims[axis] = b.CreateSub(index.dims[axis], cx.i64c(offset), "", true, true);
    // The operand first: it may add blocks (a concat inside), and the phi's
    // edge comes from the block it ends in. (As one call's two arguments, the
    // order of the two is unspecified; GCC took the block first.)
    llvm::Value* part = a.operands[i](in);
    incoming.emplace_back(part, b.GetInsertBlock());
    b.CreateBr(done);
    if (next) b.SetInsertPoint(next);
    offset += len;
  }
  b.SetInsertPoint(done);
  llvm::PHINode* phi = b.CreatePHI(incoming[0].first->getType(), static_cast<unsigned>(incoming.size()));
  for (const auto& [v, block] : incoming) phi->addIncoming(v, block);
  return phi;
}

}  // namespace

void register_shape_emitters(EmitterRegistry& r) {
  r.add_elemental("identity", pass_through);
  r.add_elemental("stop_gradient", pass_through);
  r.add_elemental("broadcast", broadcast);
  r.add_elemental("reshape", reshape);
  r.add_elemental("transpose", transpose);
  r.add_elemental("slice", slice);
  r.add_elemental("concat", concat);
}

}  // namespace kiln::compiler
