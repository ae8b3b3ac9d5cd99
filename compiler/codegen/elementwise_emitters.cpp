// Elemental generators for ops/elementwise.cpp: unary math, binary arithmetic with
// broadcasting, comparisons, logic, select and cast. Semantics match the reference
// kernels exactly where IEEE allows (maximum is `x > y ? x : y` as xtensor's, i32
// arithmetic wraps, i32 division truncates and wraps INT_MIN / -1); exp, log,
// tanh and erf use fast_math.h.
#include <llvm/IR/Intrinsics.h>

#include "compiler/codegen/families.h"
#include "compiler/codegen/fast_math.h"
#include "compiler/runtime/kiln_runtime.h"

namespace kiln::compiler {

namespace {

// f(cx, dtype of the operands, operand values...) -> result value.
using UnaryOp = llvm::Value* (*)(LoweringContext&, DType, llvm::Value*);
using BinaryOp = llvm::Value* (*)(LoweringContext&, DType, llvm::Value*, llvm::Value*);

ElementalFn unary(UnaryOp f) {
  return [f](const ElementalArgs& a, const ElementIndex& index) {
    return f(a.cx, a.node.in(0).dtype, a.operands[0](index));
  };
}

// The operand values at a result index, under numpy broadcasting.
std::vector<llvm::Value*> broadcast_operands(const ElementalArgs& a, const ElementIndex& index) {
  std::vector<llvm::Value*> values;
  for (size_t i = 0; i < a.operands.size(); ++i)
    values.push_back(a.operands[i](broadcast_index(a.cx, index, a.node.out().shape, a.node.in(i).shape)));
  return values;
}

ElementalFn binary(BinaryOp f) {
  return [f](const ElementalArgs& a, const ElementIndex& index) {
    const std::vector<llvm::Value*> v = broadcast_operands(a, index);
    return f(a.cx, a.node.in(0).dtype, v[0], v[1]);
  };
}

llvm::Value* zero_like(llvm::Value* v) { return llvm::Constant::getNullValue(v->getType()); }

// i32 division as the reference does it: y == 0 is a run-time error (the lanes
// divide by 1 meanwhile), y == -1 negates with wrap-around (sdiv would trap on
// INT_MIN / -1), otherwise C's truncating division.
llvm::Value* int_div(LoweringContext& cx, llvm::Value* x, llvm::Value* y) {
  auto& b = cx.b();
  llvm::Value* zero = b.CreateICmpEQ(y, zero_like(y));
  cx.report_error_if(zero, KILN_ERROR_INTEGER_DIVISION_BY_ZERO);
  llvm::Value* minus_one = b.CreateICmpEQ(y, llvm::Constant::getAllOnesValue(y->getType()));
  llvm::Value* one = llvm::ConstantInt::get(y->getType(), 1);
  llvm::Value* safe = b.CreateSelect(b.CreateOr(zero, minus_one), one, y);
  return b.CreateSelect(minus_one, b.CreateNeg(x), b.CreateSDiv(x, safe));
}

llvm::Value* compare(LoweringContext& cx, DType t, llvm::CmpInst::Predicate fp, llvm::CmpInst::Predicate ip,
                     llvm::Value* x, llvm::Value* y) {
  return is_floating_point(t) ? cx.b().CreateFCmp(fp, x, y) : cx.b().CreateICmp(ip, x, y);
}

// Conversions as convert_element: to bool is x != 0 (nan is true), f32 -> i32
// truncates and saturates with nan -> 0 (fptosi.sat), bool -> number is 0 or 1,
// -> bf16 rounds to nearest even (bf16 is an f32 in registers).
llvm::Value* convert(LoweringContext& cx, DType from, DType to, llvm::Value* x, int width) {
  auto& b = cx.b();
  llvm::Type* type = cx.reg_type(to, width);
  if (from == to) return x;
  if (to == DType::boolean)
    return is_floating_point(from) ? b.CreateFCmpUNE(x, zero_like(x)) : b.CreateICmpNE(x, zero_like(x));
  if (to == DType::bf16) return cx.round_bf16(convert(cx, from, DType::f32, x, width));
  if (from == DType::bf16) return convert(cx, DType::f32, to, x, width);
  if (from == DType::boolean) return to == DType::f32 ? b.CreateUIToFP(x, type) : b.CreateZExt(x, type);
  if (from == DType::i32) return b.CreateSIToFP(x, type);
  return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {type, x->getType()}, {x});
}

void add_unary(EmitterRegistry& r) {
  using I = llvm::Intrinsic::ID;
  r.add_elemental("neg", unary([](LoweringContext& cx, DType t, llvm::Value* x) {
                    return is_floating_point(t) ? cx.b().CreateFNeg(x) : cx.b().CreateNeg(x);
                  }));
  r.add_elemental("exp", unary([](LoweringContext& cx, DType, llvm::Value* x) { return emit_exp(cx, x); }));
  r.add_elemental("log", unary([](LoweringContext& cx, DType, llvm::Value* x) { return emit_log(cx, x); }));
  r.add_elemental("tanh", unary([](LoweringContext& cx, DType, llvm::Value* x) { return emit_tanh(cx, x); }));
  r.add_elemental("erf", unary([](LoweringContext& cx, DType, llvm::Value* x) { return emit_erf(cx, x); }));
  r.add_elemental("sqrt", unary([](LoweringContext& cx, DType, llvm::Value* x) -> llvm::Value* {
                    return cx.b().CreateUnaryIntrinsic(I(llvm::Intrinsic::sqrt), x);
                  }));
  r.add_elemental("rsqrt", unary([](LoweringContext& cx, DType, llvm::Value* x) {
                    llvm::Value* one = llvm::ConstantFP::get(x->getType(), 1.0);
                    return cx.b().CreateFDiv(one, cx.b().CreateUnaryIntrinsic(I(llvm::Intrinsic::sqrt), x));
                  }));
  r.add_elemental("relu", unary([](LoweringContext& cx, DType, llvm::Value* x) {
                    return cx.b().CreateSelect(cx.b().CreateFCmpOGT(x, zero_like(x)), x, zero_like(x));
                  }));
  r.add_elemental("logical_not", unary([](LoweringContext& cx, DType, llvm::Value* x) { return cx.b().CreateNot(x); }));
}

void add_binary(EmitterRegistry& r) {
  r.add_elemental("add", binary([](LoweringContext& cx, DType t, llvm::Value* x, llvm::Value* y) {
                    return is_floating_point(t) ? cx.b().CreateFAdd(x, y) : cx.b().CreateAdd(x, y);
                  }));
  r.add_elemental("sub", binary([](LoweringContext& cx, DType t, llvm::Value* x, llvm::Value* y) {
                    return is_floating_point(t) ? cx.b().CreateFSub(x, y) : cx.b().CreateSub(x, y);
                  }));
  r.add_elemental("mul", binary([](LoweringContext& cx, DType t, llvm::Value* x, llvm::Value* y) {
                    return is_floating_point(t) ? cx.b().CreateFMul(x, y) : cx.b().CreateMul(x, y);
                  }));
  r.add_elemental("div", binary([](LoweringContext& cx, DType t, llvm::Value* x, llvm::Value* y) {
                    return is_floating_point(t) ? cx.b().CreateFDiv(x, y) : int_div(cx, x, y);
                  }));
  r.add_elemental("pow", binary([](LoweringContext& cx, DType, llvm::Value* x, llvm::Value* y) -> llvm::Value* {
                    // llvm.pow becomes calls to the C library's powf, the function std::pow uses.
                    return cx.b().CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
                  }));
  r.add_elemental("maximum", binary([](LoweringContext& cx, DType t, llvm::Value* x, llvm::Value* y) {
                    using P = llvm::CmpInst;
                    return cx.b().CreateSelect(compare(cx, t, P::FCMP_OGT, P::ICMP_SGT, x, y), x, y);
                  }));
  r.add_elemental("minimum", binary([](LoweringContext& cx, DType t, llvm::Value* x, llvm::Value* y) {
                    using P = llvm::CmpInst;
                    return cx.b().CreateSelect(compare(cx, t, P::FCMP_OLT, P::ICMP_SLT, x, y), x, y);
                  }));
  r.add_elemental("logical_and", binary([](LoweringContext& cx, DType, llvm::Value* x, llvm::Value* y) {
                    return cx.b().CreateAnd(x, y);
                  }));
  r.add_elemental("logical_or", binary([](LoweringContext& cx, DType, llvm::Value* x, llvm::Value* y) {
                    return cx.b().CreateOr(x, y);
                  }));
}

void add_comparisons(EmitterRegistry& r) {
  using P = llvm::CmpInst;
  struct Comparison {
    const char* op;
    P::Predicate fp, ip;
  };
  // Ordered float predicates (nan compares false) except !=, which is true for nan.
  for (const Comparison& c : {Comparison{"equal", P::FCMP_OEQ, P::ICMP_EQ},
                              Comparison{"not_equal", P::FCMP_UNE, P::ICMP_NE},
                              Comparison{"less", P::FCMP_OLT, P::ICMP_SLT},
                              Comparison{"less_equal", P::FCMP_OLE, P::ICMP_SLE},
                              Comparison{"greater", P::FCMP_OGT, P::ICMP_SGT},
                              Comparison{"greater_equal", P::FCMP_OGE, P::ICMP_SGE}}) {
    r.add_elemental(c.op, [c](const ElementalArgs& a, const ElementIndex& index) {
      const std::vector<llvm::Value*> v = broadcast_operands(a, index);
      return compare(a.cx, a.node.in(0).dtype, c.fp, c.ip, v[0], v[1]);
    });
  }
}

}  // namespace

void register_elementwise_emitters(EmitterRegistry& r) {
  add_unary(r);
  add_binary(r);
  add_comparisons(r);
  r.add_elemental("select", [](const ElementalArgs& a, const ElementIndex& index) {
    const std::vector<llvm::Value*> v = broadcast_operands(a, index);
    return a.cx.b().CreateSelect(v[0], v[1], v[2]);
  });
  r.add_elemental("cast", [](const ElementalArgs& a, const ElementIndex& index) {
    return convert(a.cx, a.node.in(0).dtype, a.node.out().dtype, a.operands[0](index), index.width);
  });
}

}  // namespace kiln::compiler
