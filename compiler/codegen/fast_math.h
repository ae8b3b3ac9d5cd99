#pragma once
// Vectorizable f32 exp, log and tanh emitted as IR (Cephes-style range reduction
// and polynomials), for float or <W x float> operands. Special inputs behave as
// std:: does: exp(-inf) = 0, exp(inf) = inf, exp overflows to inf above 88.72 and
// underflows through the subnormals to 0; log(0) = -inf, log(x < 0) = nan,
// log(inf) = inf, subnormal inputs are exact-scaled; tanh saturates to +-1 and
// keeps the sign of zero; nan gives nan everywhere.
//
// Maximum errors in ulp of the float result against the correctly rounded value
// (std:: in double, rounded to float), measured over every 61st float bit pattern
// (about 70 million inputs, all finite and the special ones) by
// tests/jit/fast_math_test.cpp, which asserts these bounds:
//   exp   2 ulp (results in the subnormal range: 1 ulp of the smallest subnormal)
//   log   2 ulp
//   tanh  4 ulp
// (std::exp / log / tanh for float are within 1 ulp of the same reference.)
namespace llvm {
class Value;
}

namespace kiln::compiler {

class LoweringContext;

llvm::Value* emit_exp(LoweringContext& cx, llvm::Value* x);
llvm::Value* emit_log(LoweringContext& cx, llvm::Value* x);
llvm::Value* emit_tanh(LoweringContext& cx, llvm::Value* x);

// Horner's rule with fused multiply-adds: ((c[0] x + c[1]) x + ...) + c[n-1].
llvm::Value* emit_polynomial(LoweringContext& cx, llvm::Value* x, const float* coefficients, int n);

}  // namespace kiln::compiler
