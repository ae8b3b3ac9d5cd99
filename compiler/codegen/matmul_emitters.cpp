// matmul(a, b) {transpose_a, transpose_b}, batched with numpy-broadcast batch
// dims (ops/matmul.cpp), lowered as the packed, register-blocked GEMM of gemm.h:
// each result batch reads its operands' matrices at broadcast batch indices, so
// a broadcast operand is packed from the same memory for every batch it serves.
// A fused epilogue (kernel_codegen.h) is applied to each panel of C in the
// last K block (gemm.h); the sums themselves are the same with or without one.
#include "compiler/codegen/families.h"
#include "compiler/codegen/gemm.h"
#include "compiler/codegen/kernel_codegen.h"

namespace kiln::compiler {

namespace {

// The first element (of dtype t) of an operand's matrix for result batch `bi` (i64).
llvm::Value* matrix_start(LoweringContext& cx, DType t, llvm::Value* base, llvm::Value* bi, const Shape& batch,
                          const Shape& operand_batch, int64_t matrix_size) {
  const ElementIndex in_operand =
      broadcast_index(cx, ElementIndex{unflatten(cx, bi, batch), 1, -1}, batch, operand_batch);
  llvm::Value* offset =
      cx.b().CreateMul(flat_offset(cx, in_operand.dims, operand_batch), cx.i64c(matrix_size), "", true, true);
  return cx.b().CreateInBoundsGEP(cx.mem_type(t), base, offset);
}

Shape batch_dims(const Shape& s) { return Shape(s.begin(), s.end() - 2); }

// Where operand i is read: the value itself, or for a bf16 cast of a kernel
// input fused here (is_bf16_cast_of_declaration), that input in f32, which the
// GEMM rounds as it packs it.
struct OperandMemory {
  Value value;
  DType dtype;
};
OperandMemory operand_memory(const NodeRef& n, size_t i) {
  const Value v = n.node.operands[i];
  if (n.graph.value(v).kind == ValueKind::result) {
    const Node& producer = n.graph.producer(v);
    if (is_bf16_cast_of_declaration(n.graph, producer)) return {producer.operands[0], DType::f32};
  }
  return {v, n.in(i).dtype};
}

// Applies `e` to rows m0..m0+rows and columns n0..n0+cols of result batch bi
// (all i64): W columns at a time, then the rest one at a time.
void apply_epilogue(LoweringContext& cx, const Epilogue& e, const Shape& out, llvm::Value* bi, llvm::Value* m0,
                    llvm::Value* rows, llvm::Value* n0, llvm::Value* cols) {
  auto& b = cx.b();
  const size_t rank = out.size();
  const int w = cx.vector_width();
  std::vector<llvm::Value*> dims = unflatten(cx, bi, batch_dims(out));
  dims.resize(rank);
  llvm::Value* vector_end = b.CreateSub(cols, b.CreateURem(cols, cx.i64c(w)));
  cx.for_range(m0, b.CreateAdd(m0, rows), 1, [&](llvm::Value* i) {
    dims[rank - 2] = i;
    const auto step = [&](llvm::Value* j, int width) {
      dims[rank - 1] = b.CreateAdd(n0, j);
      const ElementIndex index{dims, width, width > 1 ? static_cast<int>(rank - 1) : -1};
      std::vector<llvm::Value*> values;  // all read before any is stored: an output may overwrite an input
      for (const Epilogue::Output& o : e.outputs) values.push_back(o.generator(index));
      llvm::Value* offset = flat_offset(cx, dims, out);
      for (size_t i = 0; i < values.size(); ++i)
        cx.store(e.outputs[i].dtype, cx.buffer(e.outputs[i].value), offset, values[i]);
    };
    cx.for_range(cx.i64c(0), vector_end, w, [&](llvm::Value* j) { step(j, w); });
    cx.for_range(vector_end, cols, 1, [&](llvm::Value* j) { step(j, 1); });
  });
}

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
  if (args.epilogue)
    p.epilogue = [&](llvm::Value* bi, llvm::Value* m0, llvm::Value* rows, llvm::Value* n0, llvm::Value* cols) {
      apply_epilogue(cx, *args.epilogue, out, bi, m0, rows, n0, cols);
    };
  const Value column_sums = args.epilogue ? args.epilogue->column_sums_of_b : Value{};
  if (column_sums.valid()) p.column_sums = [&cx, column_sums] { return cx.buffer(column_sums); };
  if (p.k == 0) {  // empty sums
    cx.b().CreateMemSet(args.result_ptr(), cx.b().getInt8(0), static_cast<uint64_t>(p.batches * p.m * p.n) * 4,
                        llvm::Align(4));
    if (column_sums.valid())
      cx.b().CreateMemSet(cx.buffer(column_sums), cx.b().getInt8(0), static_cast<uint64_t>(p.n) * 4, llvm::Align(4));
    if (p.epilogue)
      cx.for_range(0, p.batches, 1,
                   [&](llvm::Value* bi) { p.epilogue(bi, cx.i64c(0), cx.i64c(p.m), cx.i64c(0), cx.i64c(p.n)); });
    return;
  }
  p.operands = args.node.in(0).dtype;
  const OperandMemory a_memory = operand_memory(args.node, 0), b_memory = operand_memory(args.node, 1);
  if (a_memory.dtype != p.operands) p.a_memory = a_memory.dtype;
  if (b_memory.dtype != p.operands) p.b_memory = b_memory.dtype;
  p.a_matrix = [&](llvm::Value* bi) {
    return matrix_start(cx, a_memory.dtype, cx.buffer(a_memory.value), bi, batch, a_batch, p.m * p.k);
  };
  p.b_matrix = [&](llvm::Value* bi) {
    return matrix_start(cx, b_memory.dtype, cx.buffer(b_memory.value), bi, batch, b_batch, p.k * p.n);
  };
  p.c_matrix = [&](llvm::Value* bi) {
    return matrix_start(cx, DType::f32, args.result_ptr(), bi, batch, batch, p.m * p.n);
  };
  emit_gemm(cx, cx.unique_name("matmul"), p);
}

}  // namespace

void register_matmul_emitters(EmitterRegistry& r) { r.add_kernel("matmul", emit_matmul, KernelReads::memory, /*takes_epilogue=*/true); }

}  // namespace kiln::compiler
