// gather and scatter_add (ops/gather.cpp).
//
// gather(table, indices) {axis} is elemental: the result index splits into the
// table's outer dims, the indices' dims and the table's inner dims; the index
// value read at the middle part picks the table row. When the lanes run along the
// table's dims, all lanes share one index and the table generator loads a vector;
// when they run along the indices, each lane looks up its own row.
//
// scatter_add(updates, indices) {axis, size} is a kernel: the result seen as
// [outer, size, mid, last] is zeroed (an elemental loop, contiguous), then the
// updates [outer, n, mid, last] are added at the rows the n indices name.
// Duplicate indices accumulate, so the indices are walked serially, in order (the
// reference's order: results are bit-identical to it); the threads split the
// (outer, mid) pairs and blocks of `last` instead, each a disjoint part of the
// result, vectorized along `last`.
//
// update_slice(x, update, start) {axis} is a kernel: the result seen as [outer,
// dim, inner] is x, copied unless the result took x's memory (the memory plan's
// choice for a decoder's cache, OpDef::overwrites_operand0: the pointers are
// compared at run time), then each of the outer blocks of update (n x inner
// contiguous elements) is copied in at the clamped start.
//
// An index outside [0, dim) is a run-time error (KILN_ERROR_INDEX_OUT_OF_RANGE in
// the status word), as the reference throws; the lookup then uses row 0 instead,
// so nothing is read or written out of bounds. One difference remains for gather:
// when its result has no elements (an empty table dim besides the axis), no index
// is ever read, so no error is reported where the reference still checks them.
#include <llvm/IR/Intrinsics.h>

#include <algorithm>

#include "compiler/codegen/families.h"
#include "compiler/runtime/kiln_runtime.h"

namespace kiln::compiler {

namespace {

std::vector<llvm::Value*> concat_dims(std::initializer_list<std::vector<llvm::Value*>> parts) {
  std::vector<llvm::Value*> dims;
  for (const auto& p : parts) dims.insert(dims.end(), p.begin(), p.end());
  return dims;
}

// The index read (i32) as an i64 row in [0, dim): an out-of-range value is reported
// and replaced by 0 (dim must be > 0).
llvm::Value* checked_row(LoweringContext& cx, llvm::Value* index, int64_t dim) {
  auto& b = cx.b();
  llvm::Value* row = b.CreateSExt(index, cx.i64());
  llvm::Value* bad = b.CreateICmpUGE(row, cx.i64c(dim));  // negative rows are huge unsigned
  cx.report_error_if(bad, KILN_ERROR_INDEX_OUT_OF_RANGE);
  return b.CreateSelect(bad, cx.i64c(0), row);
}

llvm::Value* gather(const ElementalArgs& a, const ElementIndex& index) {
  LoweringContext& cx = a.cx;
  const TensorType& table = a.node.in(0);
  const auto axis = static_cast<size_t>(normalize_axis(a.node.attrs().get_int("axis"), table.rank()));
  const size_t index_rank = a.node.in(1).shape.size();
  const auto lane = static_cast<size_t>(index.lane_axis);
  if (index.width > 1 && index.lane_axis >= 0 && lane >= axis && lane < axis + index_rank)
    return per_lane(cx, index, [&](const ElementIndex& one) { return gather(a, one); });

  const auto part = [&](size_t begin, size_t end) {
    return std::vector<llvm::Value*>(index.dims.begin() + static_cast<std::ptrdiff_t>(begin),
                                     index.dims.begin() + static_cast<std::ptrdiff_t>(end));
  };
  llvm::Value* read = a.operands[1](ElementIndex{part(axis, axis + index_rank), 1, -1});
  const int64_t dim = table.shape[axis];
  if (dim == 0) {  // every index is out of range, and there is no row to read
    cx.report_error_if(cx.b().getTrue(), KILN_ERROR_INDEX_OUT_OF_RANGE);
    return cx.constant(table.dtype, 0, index.width);
  }
  ElementIndex at{
      concat_dims({part(0, axis), {checked_row(cx, read, dim)}, part(axis + index_rank, index.dims.size())}),
      index.width, -1};
  if (index.lane_axis >= 0) at.lane_axis = static_cast<int>(lane < axis ? lane : lane - index_rank + 1);
  return a.operands[0](at);
}

// scatter_add's result as [outer, size, mid, last] and its updates as
// [outer, n, mid, last] (`last` absent, i.e. 1, when axis is the last axis).
struct ScatterAdd {
  const KernelEmitArgs& a;
  const TensorType& result;
  const Shape& indices_shape;
  Shape outer_shape, mid_shape;
  int64_t size, n, last;
  bool has_last;
  int64_t block;   // `last` positions per unit of work
  int64_t blocks;  // per (outer, mid) pair

  explicit ScatterAdd(const KernelEmitArgs& args)
      : a(args), result(args.node.out()), indices_shape(args.node.in(1).shape) {
    const Shape& shape = result.shape;
    const auto axis = static_cast<std::ptrdiff_t>(normalize_axis(a.node.attrs().get_int("axis"), result.rank()));
    outer_shape.assign(shape.begin(), shape.begin() + axis);
    size = shape[static_cast<size_t>(axis)];
    n = numel(indices_shape);
    has_last = axis + 1 < static_cast<std::ptrdiff_t>(shape.size());
    if (has_last) mid_shape.assign(shape.begin() + axis + 1, shape.end() - 1);
    last = has_last ? shape.back() : 1;
    block = 4 * a.cx.vector_width();
    blocks = (last + block - 1) / block;
  }

  llvm::Value* index_at(llvm::Value* i) const {
    return a.operands[1](ElementIndex{unflatten(a.cx, i, indices_shape), 1, -1});
  }

  // Accumulates the updates into positions [first, stop) of `last` for one (outer, mid) pair.
  void emit_unit(llvm::Value* unit) const {
    LoweringContext& cx = a.cx;
    auto& b = cx.b();
    const int width = cx.vector_width();
    llvm::Value* out = a.result_ptr();
    llvm::Value* pair = b.CreateUDiv(unit, cx.i64c(blocks));
    const int64_t mid = numel(mid_shape);
    const std::vector<llvm::Value*> outer_dims = unflatten(cx, b.CreateUDiv(pair, cx.i64c(mid)), outer_shape);
    const std::vector<llvm::Value*> mid_dims = unflatten(cx, b.CreateURem(pair, cx.i64c(mid)), mid_shape);
    llvm::Value* first = b.CreateMul(b.CreateURem(unit, cx.i64c(blocks)), cx.i64c(block));
    llvm::Value* stop =
        b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b.CreateAdd(first, cx.i64c(block)), cx.i64c(last));
    llvm::Value* vector_end = b.CreateSub(stop, b.CreateURem(b.CreateSub(stop, first), cx.i64c(width)));
    // body(dims, j, w) for the unit's positions j, w lanes at a time; dims ends in j if there is a last axis.
    const auto for_lanes = [&](const std::vector<llvm::Value*>& dims,
                               const std::function<void(const ElementIndex&)>& body) {
      const auto at = [&](llvm::Value* j, int w) {
        ElementIndex index{dims, w, -1};
        if (has_last) index.dims.push_back(j);
        if (w > 1) index.lane_axis = static_cast<int>(index.dims.size()) - 1;
        body(index);
      };
      cx.for_range(first, vector_end, width, [&](llvm::Value* j) { at(j, width); });
      cx.for_range(vector_end, stop, 1, [&](llvm::Value* j) { at(j, 1); });
    };
    cx.for_range(0, n, 1, [&](llvm::Value* i) {
      llvm::Value* row = b.CreateSExt(index_at(i), cx.i64());
      row = b.CreateSelect(b.CreateICmpUGE(row, cx.i64c(size)), cx.i64c(0), row);  // reported up front
      const std::vector<llvm::Value*> update_dims =
          concat_dims({outer_dims, unflatten(cx, i, indices_shape), mid_dims});
      const std::vector<llvm::Value*> dims = concat_dims({outer_dims, {row}, mid_dims});
      for_lanes(update_dims, [&](const ElementIndex& u) {
        std::vector<llvm::Value*> r = dims;
        if (has_last) r.push_back(u.dims.back());
        llvm::Value* at = flat_offset(cx, r, result.shape);
        llvm::Value* sum = cx.load(result.dtype, out, at, u.width);
        llvm::Value* update = a.operands[0](u);
        sum = result.dtype == DType::f32 ? b.CreateFAdd(sum, update) : b.CreateAdd(sum, update);
        cx.store(result.dtype, out, at, sum);
      });
    });
  }

  void emit() const {
    LoweringContext& cx = a.cx;
    // Every index is checked once up front, whether or not the result has
    // elements, as the reference does.
    cx.for_range(0, n, 1, [&](llvm::Value* i) { checked_row(cx, index_at(i), size); });
    if (result.numel() == 0) return;
    emit_elemental_loop(cx, cx.unique_name("scatter_add.zero"), result.shape,
                        {{a.node.node.results[0], result.dtype,
                          [&](const ElementIndex& index) { return cx.constant(result.dtype, 0, index.width); }}});
    const int64_t units = numel(outer_shape) * numel(mid_shape) * blocks;
    const int64_t unit_elements = n * std::min(block, last);
    cx.parallel_for(cx.unique_name("scatter_add.blocks"), units, LoweringContext::grain_for(unit_elements),
                    [&](llvm::Value* begin, llvm::Value* end) {
                      cx.for_range(begin, end, 1, [&](llvm::Value* unit) { emit_unit(unit); });
                    });
  }
};

}  // namespace

void emit_update_slice(const KernelEmitArgs& a) {
  LoweringContext& cx = a.cx;
  auto& b = cx.b();
  const TensorType& x = a.node.in(0);
  const auto axis = static_cast<size_t>(normalize_axis(a.node.attrs().get_int("axis"), x.rank()));
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (i != axis) (i < axis ? outer : inner) *= x.shape[i];
  const int64_t dim = x.shape[axis], n = a.node.in(1).shape[axis];
  const auto bytes = static_cast<int64_t>(dtype_size(x.dtype));
  llvm::Value* out = a.result_ptr();
  llvm::Value* in = a.operand_ptr(0);
  llvm::Function* f = b.GetInsertBlock()->getParent();
  auto* copy = llvm::BasicBlock::Create(cx.context(), "update_slice.copy", f);
  auto* write = llvm::BasicBlock::Create(cx.context(), "update_slice.write", f);
  b.CreateCondBr(b.CreateICmpNE(out, in), copy, write);
  b.SetInsertPoint(copy);
  b.CreateMemCpy(out, llvm::MaybeAlign(1), in, llvm::MaybeAlign(1), static_cast<uint64_t>(x.numel() * bytes));
  b.CreateBr(write);
  b.SetInsertPoint(write);
  if (outer * n * inner == 0) return;
  llvm::Value* start = b.CreateSExt(b.CreateLoad(b.getInt32Ty(), a.operand_ptr(2)), cx.i64());
  start = b.CreateBinaryIntrinsic(llvm::Intrinsic::smax, start, cx.i64c(0));
  start = b.CreateBinaryIntrinsic(llvm::Intrinsic::smin, start, cx.i64c(dim - n));
  llvm::Value* update = a.operand_ptr(1);
  cx.for_range(0, outer, 1, [&](llvm::Value* o) {
    llvm::Value* to = b.CreateMul(b.CreateAdd(b.CreateMul(o, cx.i64c(dim)), start), cx.i64c(inner * bytes));
    llvm::Value* from = b.CreateMul(o, cx.i64c(n * inner * bytes));
    b.CreateMemMove(b.CreateInBoundsGEP(b.getInt8Ty(), out, to), llvm::MaybeAlign(1),
                   b.CreateInBoundsGEP(b.getInt8Ty(), update, from), llvm::MaybeAlign(1),
                   cx.i64c(n * inner * bytes));
  });
}

void register_gather_emitters(EmitterRegistry& r) {
  r.add_elemental("gather", gather);
  r.add_kernel("scatter_add", [](const KernelEmitArgs& a) { ScatterAdd(a).emit(); }, KernelReads::memory);
  r.add_kernel("update_slice", emit_update_slice, KernelReads::memory);
}

}  // namespace kiln::compiler
