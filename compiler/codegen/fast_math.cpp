#include "compiler/codegen/fast_math.h"

#include <cmath>
#include <iterator>
#include <limits>
#include <llvm/IR/Intrinsics.h>

#include "compiler/codegen/lowering_context.h"

namespace kiln::compiler {

namespace {

int lanes(llvm::Value* x) {
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(x->getType())) return static_cast<int>(vt->getNumElements());
  return 1;
}

struct Emit {
  LoweringContext& cx;
  int w;
  llvm::IRBuilder<>& b() { return cx.b(); }
  llvm::Value* f(float v) { return cx.f32c(v, w); }
  llvm::Value* i(int32_t v) { return cx.i32c(v, w); }
  llvm::Value* fma(llvm::Value* a, llvm::Value* x, llvm::Value* c) {
    return b().CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, x, c});
  }
  llvm::Value* call(llvm::Intrinsic::ID id, llvm::Value* x) { return b().CreateIntrinsic(id, {x->getType()}, {x}); }
  // 2^n for integer n in [-126, 127], built from the exponent bits.
  llvm::Value* pow2(llvm::Value* n) {
    llvm::Value* bits = b().CreateShl(b().CreateAdd(n, i(127)), i(23));
    return b().CreateBitCast(bits, cx.reg_type(DType::f32, w));
  }
};

constexpr float kInf = std::numeric_limits<float>::infinity();

}  // namespace

llvm::Value* emit_polynomial(LoweringContext& cx, llvm::Value* x, const float* coefficients, int n) {
  Emit e{cx, lanes(x)};
  llvm::Value* acc = e.f(coefficients[0]);
  for (int k = 1; k < n; ++k) acc = e.fma(acc, x, e.f(coefficients[k]));
  return acc;
}

// exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n ln2 in [-ln2/2, ln2/2]
// (ln2 split in two so n * kLn2Hi is exact); exp(r) by Cephes expf's polynomial.
// 2^n is applied as two factors so results in the subnormal range round once.
llvm::Value* emit_exp(LoweringContext& cx, llvm::Value* x) {
  static constexpr float kPoly[] = {1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f,
                                    4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};
  static constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  static constexpr float kOverflow = 88.72283935546875f;   // largest x with a finite exp(x)
  static constexpr float kUnderflow = -103.97208404541016f;  // below: exp(x) rounds to 0
  Emit e{cx, lanes(x)};
  auto& b = e.b();
  llvm::Value* is_nan = b.CreateFCmpUNO(x, x);
  // Clamp (nan -> 0) so the integer conversions below see only small values.
  llvm::Value* xc = b.CreateSelect(is_nan, e.f(0), x);
  xc = b.CreateMinNum(b.CreateMaxNum(xc, e.f(-104.0f)), e.f(89.0f));
  llvm::Value* n = e.call(llvm::Intrinsic::rint, b.CreateFMul(xc, e.f(1.44269504088896341f)));
  llvm::Value* r = b.CreateFSub(b.CreateFSub(xc, b.CreateFMul(n, e.f(kLn2Hi))), b.CreateFMul(n, e.f(kLn2Lo)));
  llvm::Value* p = emit_polynomial(cx, r, kPoly, static_cast<int>(std::size(kPoly)));
  p = e.fma(p, b.CreateFMul(r, r), b.CreateFAdd(r, e.f(1.0f)));  // 1 + r + r^2 P(r)
  llvm::Value* ni = b.CreateFPToSI(n, cx.reg_type(DType::i32, e.w));
  llvm::Value* n1 = b.CreateAShr(ni, e.i(1));
  llvm::Value* n2 = b.CreateSub(ni, n1);
  llvm::Value* y = b.CreateFMul(b.CreateFMul(p, e.pow2(n1)), e.pow2(n2));
  y = b.CreateSelect(b.CreateFCmpOGT(x, e.f(kOverflow)), e.f(kInf), y);
  y = b.CreateSelect(b.CreateFCmpOLT(x, e.f(kUnderflow)), e.f(0), y);
  return b.CreateSelect(is_nan, x, y);
}

// log(x) = e ln2 + log(m), x = m 2^e with m in [sqrt(1/2), sqrt(2)); log(1 + f)
// = f - f^2/2 + f^3 P(f) by Cephes logf's polynomial. Subnormals are scaled by
// 2^23 first.
llvm::Value* emit_log(LoweringContext& cx, llvm::Value* x) {
  static constexpr float kPoly[] = {7.0376836292E-2f,  -1.1514610310E-1f, 1.1676998740E-1f,
                                    -1.2420140846E-1f, 1.4249322787E-1f,  -1.6668057665E-1f,
                                    2.0000714765E-1f,  -2.4999993993E-1f, 3.3333331174E-1f};
  static constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  Emit e{cx, lanes(x)};
  auto& b = e.b();
  llvm::Type* i32 = cx.reg_type(DType::i32, e.w);
  llvm::Value* subnormal = b.CreateFCmpOLT(x, e.f(std::numeric_limits<float>::min()));
  llvm::Value* xs = b.CreateSelect(subnormal, b.CreateFMul(x, e.f(8388608.0f)), x);
  llvm::Value* bits = b.CreateBitCast(xs, i32);
  llvm::Value* exponent = b.CreateSub(b.CreateAnd(b.CreateLShr(bits, e.i(23)), e.i(0xff)), e.i(126));
  exponent = b.CreateSub(exponent, b.CreateSelect(subnormal, e.i(23), e.i(0)));
  // The mantissa as a float in [0.5, 1).
  llvm::Value* m = b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, e.i(0x007fffff)), e.i(0x3f000000)),
                                   cx.reg_type(DType::f32, e.w));
  llvm::Value* small = b.CreateFCmpOLT(m, e.f(0.707106781186547524f));
  exponent = b.CreateSub(exponent, b.CreateZExt(small, i32));
  // f = 2m - 1 below sqrt(1/2), else m - 1 (both exact).
  llvm::Value* f = b.CreateFSub(b.CreateSelect(small, b.CreateFAdd(m, m), m), e.f(1.0f));
  llvm::Value* fe = b.CreateSIToFP(exponent, cx.reg_type(DType::f32, e.w));
  llvm::Value* z = b.CreateFMul(f, f);
  llvm::Value* y = b.CreateFMul(b.CreateFMul(emit_polynomial(cx, f, kPoly, static_cast<int>(std::size(kPoly))), f), z);
  y = e.fma(fe, e.f(kLn2Lo), y);
  y = e.fma(z, e.f(-0.5f), y);
  llvm::Value* r = b.CreateFAdd(f, y);
  r = e.fma(fe, e.f(kLn2Hi), r);
  // Special inputs: 0 -> -inf, negative -> nan, inf -> inf, nan -> nan.
  r = b.CreateSelect(b.CreateFCmpOEQ(x, e.f(kInf)), e.f(kInf), r);
  r = b.CreateSelect(b.CreateFCmpOLT(x, e.f(0)), e.f(std::numeric_limits<float>::quiet_NaN()), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, e.f(0)), e.f(-kInf), r);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

// tanh(x) = x + x^3 P(x^2) for |x| < 0.625 (Cephes tanhf), else
// sign(x) (1 - 2 / (exp(2|x|) + 1)), which saturates to 1 once exp overflows.
llvm::Value* emit_tanh(LoweringContext& cx, llvm::Value* x) {
  static constexpr float kPoly[] = {-5.70498872745E-3f, 2.06390887954E-2f, -5.37397155531E-2f, 1.33314422036E-1f,
                                    -3.33332819422E-1f};
  Emit e{cx, lanes(x)};
  auto& b = e.b();
  llvm::Value* ax = e.call(llvm::Intrinsic::fabs, x);
  llvm::Value* z = b.CreateFMul(x, x);
  llvm::Value* small = e.fma(b.CreateFMul(emit_polynomial(cx, z, kPoly, static_cast<int>(std::size(kPoly))), z), x, x);
  llvm::Value* q = b.CreateFDiv(e.f(2.0f), b.CreateFAdd(emit_exp(cx, b.CreateFAdd(ax, ax)), e.f(1.0f)));
  llvm::Value* large = b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, b.CreateFSub(e.f(1.0f), q), x);
  llvm::Value* y = b.CreateSelect(b.CreateFCmpOGE(ax, e.f(0.625f)), large, small);
  return b.CreateSelect(b.CreateFCmpOEQ(x, e.f(0.0f)), x, y);  // tanh(-0) = -0
}

// erf(x) = x P(x^2) / Q(x^2) on x clamped to [-4, 4] (erf is +-1 in f32 beyond),
// the rational approximation of Eigen's generic_fast_erf_float. Compares are
// ordered, so a nan passes the clamp and gives nan.
llvm::Value* emit_erf(LoweringContext& cx, llvm::Value* x) {
  static constexpr float kNumerator[] = {-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f,
                                         -5.69250639462346e-05f, -7.34990630326855e-04f, -2.95459980854025e-03f,
                                         -1.60960333262415e-02f};
  static constexpr float kDenominator[] = {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                                           -7.37332916720468e-03f, -1.42647390514189e-02f};
  Emit e{cx, lanes(x)};
  auto& b = e.b();
  llvm::Value* above = b.CreateSelect(b.CreateFCmpOGT(x, e.f(4.0f)), e.f(4.0f), x);
  llvm::Value* xc = b.CreateSelect(b.CreateFCmpOLT(above, e.f(-4.0f)), e.f(-4.0f), above);
  llvm::Value* x2 = b.CreateFMul(xc, xc);
  llvm::Value* p = emit_polynomial(cx, x2, kNumerator, static_cast<int>(std::size(kNumerator)));
  llvm::Value* q = emit_polynomial(cx, x2, kDenominator, static_cast<int>(std::size(kDenominator)));
  // x times the ratio (near 2/sqrt(pi)), not x P / Q: a subnormal x P would round early.
  return b.CreateFMul(xc, b.CreateFDiv(p, q));
}

}  // namespace kiln::compiler
