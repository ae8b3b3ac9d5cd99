#pragma once
// What attention's two kernels (attention_emitters.cpp, a row at a time, and
// attention_blocked.cpp, FlashAttention 2's blocks) share: vector access to a
// few floats, and i64 offsets.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "compiler/codegen/lowering_context.h"

namespace kiln::compiler {

// Vector access to `lanes` <= W floats at ptr + offset (i64): a plain load and
// store when lanes == W, else masked (the lanes past `lanes` read as 0 and are
// not written).
class Lanes {
 public:
  explicit Lanes(LoweringContext& cx) : cx_(cx), w_(cx.vector_width()) {}

  llvm::Type* vec() const { return llvm::FixedVectorType::get(cx_.b().getFloatTy(), static_cast<unsigned>(w_)); }

  // ... of a buffer of `dtype` (f32, or bf16 widened to f32).
  llvm::Value* load(llvm::Value* ptr, llvm::Value* offset, int64_t lanes, DType dtype = DType::f32) const {
    if (lanes == w_) return cx_.load(dtype, ptr, offset, w_);
    llvm::Value* v = cx_.load_stored(dtype, ptr, offset, w_, mask(lanes));
    return dtype == DType::bf16 ? cx_.widen_bf16(v) : v;
  }

  void store(llvm::Value* v, llvm::Value* ptr, llvm::Value* offset, int64_t lanes) const {
    llvm::Value* at = cx_.b().CreateInBoundsGEP(cx_.b().getFloatTy(), ptr, offset);
    if (lanes == w_)
      cx_.b().CreateAlignedStore(v, at, llvm::Align(4));
    else
      cx_.b().CreateMaskedStore(v, at, llvm::Align(4), mask(lanes));
  }

  // Lanes below `lanes` set.
  llvm::Constant* mask(int64_t lanes) const {
    std::vector<llvm::Constant*> bits;
    for (int l = 0; l < w_; ++l) bits.push_back(cx_.b().getInt1(l < lanes));
    return llvm::ConstantVector::get(bits);
  }

  // `lanes` of vector j (of W) of a row of n.
  int64_t in_vector(int64_t j, int64_t n) const { return std::min<int64_t>(w_, n - j * w_); }

  llvm::Value* splat(float x) const { return cx_.f32c(x, w_); }
  // The element at ptr[index] (i64) of a buffer of `dtype`, as f32, in every lane.
  llvm::Value* broadcast(llvm::Value* ptr, llvm::Value* index, DType dtype = DType::f32) const {
    return cx_.splat(cx_.load(dtype, ptr, index, 1), w_);
  }
  llvm::Value* fma(llvm::Value* a, llvm::Value* b, llvm::Value* c) const {
    return cx_.b().CreateIntrinsic(llvm::Intrinsic::fmuladd, {vec()}, {a, b, c});
  }

 private:
  LoweringContext& cx_;
  int w_;
};

// i * stride + plus (i64).
inline llvm::Value* offset(LoweringContext& cx, llvm::Value* i, int64_t stride, int64_t plus = 0) {
  return cx.b().CreateAdd(cx.b().CreateMul(i, cx.i64c(stride), "", true, true), cx.i64c(plus), "", true, true);
}

// Zeroes `floats` floats at ptr.
inline void zero(LoweringContext& cx, llvm::Value* ptr, int64_t floats) {
  cx.b().CreateMemSet(ptr, cx.b().getInt8(0), static_cast<uint64_t>(floats) * 4, llvm::Align(4));
}

// The first element of row i (i64) of rows of `cols` elements of `dtype` at
// `base`: a row of a batch's matrix, or a batch's whole matrix (its `cols` the
// matrix's size).
inline llvm::Value* row_ptr(LoweringContext& cx, llvm::Value* base, llvm::Value* i, int64_t cols,
                            DType dtype = DType::f32) {
  return cx.b().CreateInBoundsGEP(cx.mem_type(dtype), base, offset(cx, i, cols));
}

// The first element of batch bh's [rows, cols] matrix of `dtype` at `base`: the
// matrices follow each other, or, packed ({heads} = H > 0), head h of a batch
// starts at column h * cols of rows H * cols apart.
inline llvm::Value* head_matrix_ptr(LoweringContext& cx, int64_t heads, llvm::Value* base, llvm::Value* bh,
                                    int64_t rows, int64_t cols, DType dtype = DType::f32) {
  if (!heads) return row_ptr(cx, base, bh, rows * cols, dtype);
  auto& b = cx.b();
  llvm::Value* h = cx.i64c(heads);
  llvm::Value* at = b.CreateAdd(offset(cx, b.CreateUDiv(bh, h), rows * heads * cols),
                                offset(cx, b.CreateURem(bh, h), cols), "", true, true);
  return b.CreateInBoundsGEP(cx.mem_type(dtype), base, at);
}

}  // namespace kiln::compiler
