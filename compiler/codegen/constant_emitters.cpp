// Elemental generators for ops/constant.cpp: fill, iota, causal_mask. They read no
// operands, so a consumer fused with them never touches memory for the constant.
#include <limits>

#include "compiler/codegen/families.h"

namespace kiln::compiler {

namespace {

// The i64 indices along `axis` of the elements an index asks for: a vector
// base + <0, 1, ..> if the lanes run along that axis, else one value (splat later).
llvm::Value* axis_positions(LoweringContext& cx, const ElementIndex& index, size_t axis) {
  llvm::Value* base = index.dims[axis];
  if (index.width == 1 || index.lane_axis != static_cast<int>(axis)) return cx.splat(base, index.width);
  std::vector<llvm::Constant*> steps;
  for (int lane = 0; lane < index.width; ++lane) steps.push_back(cx.b().getInt64(static_cast<uint64_t>(lane)));
  return cx.b().CreateAdd(cx.splat(base, index.width), llvm::ConstantVector::get(steps), "", true, true);
}

llvm::Value* fill(const ElementalArgs& a, const ElementIndex& index) {
  return a.cx.constant(a.node.out().dtype, a.node.attrs().get_float("value"), index.width);
}

llvm::Value* iota(const ElementalArgs& a, const ElementIndex& index) {
  const TensorType& t = a.node.out();
  const auto axis = static_cast<size_t>(normalize_axis(a.node.attrs().get_int("axis"), t.rank()));
  llvm::Value* pos = axis_positions(a.cx, index, axis);
  llvm::Type* type = a.cx.reg_type(t.dtype, index.width);
  return t.dtype == DType::f32 ? a.cx.b().CreateSIToFP(pos, type) : a.cx.b().CreateTrunc(pos, type);
}

// 0 where col <= row, -inf above the diagonal.
llvm::Value* causal_mask(const ElementalArgs& a, const ElementIndex& index) {
  LoweringContext& cx = a.cx;
  llvm::Value* above = cx.b().CreateICmpSGT(axis_positions(cx, index, 1), axis_positions(cx, index, 0));
  return cx.b().CreateSelect(above, cx.f32c(-std::numeric_limits<float>::infinity(), index.width),
                             cx.f32c(0.0f, index.width));
}

}  // namespace

void register_constant_emitters(EmitterRegistry& r) {
  r.add_elemental("fill", fill);
  r.add_elemental("iota", iota);
  r.add_elemental("causal_mask", causal_mask);
}

}  // namespace kiln::compiler
