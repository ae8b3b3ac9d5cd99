#pragma once
// Vectorizable f32 exp, log, tanh and erf emitted as IR (Cephes-style range reduction
// and polynomials), for float or <W x float> operands. Special inputs behave as
// std:: does: exp(-inf) = 0, exp(inf) = inf, exp overflows to inf above 88.72 and
// underflows through the subnormals to 0; log(0) = -inf, log(x < 0) = nan,
// log(inf) = inf, subnormal inputs are exact-scaled; tanh saturates to +-1 and
// keeps the sign of zero; nan gives nan everywhere.
//
// Maximum errors in ulp (the float spacing at the exact result) against the exact
// value (std:: in double), measured over every 61st float bit pattern (about 70
// million inputs of every sign and magnitude, subnormals included) by
// tests/jit/fast_math_test.cpp, which asserts these bounds:
//   exp   1.5 ulp  (measured 1.25, near x = 15.66)
//   log   1.0 ulp  (measured 0.78, near x = 0.706)
//   tanh  1.5 ulp  (measured 1.32, near x = -0.646)
//   erf   8.0 ulp  (measured 6.38, near x = 3.893; a rational approximation, ~5e-7 relative)
// Results are deterministic for a target but may differ in the last bit between
// targets with and without FMA (the polynomials use llvm.fmuladd).
namespace llvm {
class Value;
}

namespace kiln::compiler {

class LoweringContext;

llvm::Value* emit_exp(LoweringContext& cx, llvm::Value* x);
llvm::Value* emit_log(LoweringContext& cx, llvm::Value* x);
llvm::Value* emit_tanh(LoweringContext& cx, llvm::Value* x);
llvm::Value* emit_erf(LoweringContext& cx, llvm::Value* x);

// Horner's rule with fused multiply-adds: ((c[0] x + c[1]) x + ...) + c[n-1].
llvm::Value* emit_polynomial(LoweringContext& cx, llvm::Value* x, const float* coefficients, int n);

}  // namespace kiln::compiler
