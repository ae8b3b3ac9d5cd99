// matmul(a, b) {transpose_a, transpose_b}, batched with numpy-broadcast batch
// dims (ops/matmul.cpp), lowered as the packed, register-blocked GEMM of gemm.h:
// each result batch reads its operands' matrices at broadcast batch indices, so
// a broadcast operand is packed from the same memory for every batch it serves.
#include "compiler/codegen/families.h"
#include "compiler/codegen/gemm.h"

namespace kiln::compiler {

namespace {

// The first float of an operand's matrix for result batch `bi` (i64).
llvm::Value* matrix_start(LoweringContext& cx, llvm::Value* base, llvm::Value* bi, const Shape& batch,
                          const Shape& operand_batch, int64_t matrix_size) {
  const ElementIndex in_operand =
      broadcast_index(cx, ElementIndex{unflatten(cx, bi, batch), 1, -1}, batch, operand_batch);
  llvm::Value* offset =
      cx.b().CreateMul(flat_offset(cx, in_operand.dims, operand_batch), cx.i64c(matrix_size), "", true, true);
  return cx.b().CreateInBoundsGEP(cx.b().getFloatTy(), base, offset);
}

Shape batch_dims(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

void emit_matmul(const KernelEmitArgs& args) {
  LoweringContext& cx = args.cx;
  const Shape& a = args.node.in(0).shape;
  const Shape& out = args.node.out().shape;
  const Shape batch = batch_dims(out), a_batch = batch_dims(a), b_batch = batch_dims(args.node.in(1).shape);
  GemmProblem p;
  p.ta = args.node.attrs().get_bool("transpose_a");
  p.tb = args.node.attrs().get_bool("transpose_b");
  p.batches = numel(batch);
  p.m = out[out.size() - 2];
  p.n = out.back();
  p.k = p.ta ? a[a.size() - 2] : a.back();
  if (p.batches * p.m * p.n == 0) return;
  if (p.k == 0) {  // empty sums
    cx.b().CreateMemSet(args.result_ptr(), cx.b().getInt8(0), static_cast<uint64_t>(p.batches * p.m * p.n) * 4,
                        llvm::Align(4));
    return;
  }
  p.a_matrix = [&](llvm::Value* bi) { return matrix_start(cx, args.operand_ptr(0), bi, batch, a_batch, p.m * p.k); };
  p.b_matrix = [&](llvm::Value* bi) { return matrix_start(cx, args.operand_ptr(1), bi, batch, b_batch, p.k * p.n); };
  p.c_matrix = [&](llvm::Value* bi) { return matrix_start(cx, args.result_ptr(), bi, batch, batch, p.m * p.n); };
  emit_gemm(cx, cx.unique_name("matmul"), p);
}

}  // namespace

void register_matmul_emitters(EmitterRegistry& r) { r.add_kernel("matmul", emit_matmul); }

}  // namespace kiln::compiler
