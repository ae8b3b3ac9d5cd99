#include "compiler/codegen/elemental.h"

namespace kiln::compiler {

namespace {

std::vector<int64_t> row_major_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t k = shape.size(); k-- > 1;) strides[k - 1] = strides[k] * shape[k];
  return strides;
}

ElementIndex with_lane(const ElementIndex& index, LoweringContext& cx, int lane) {
  ElementIndex one{index.dims, 1, -1};
  auto& d = one.dims[static_cast<size_t>(index.lane_axis)];
  d = cx.b().CreateAdd(d, cx.i64c(lane), "", true, true);
  return one;
}

}  // namespace

llvm::Value* flat_offset(LoweringContext& cx, const std::vector<llvm::Value*>& dims, const Shape& shape) {
  const std::vector<int64_t> strides = row_major_strides(shape);
  llvm::Value* offset = nullptr;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 1) continue;  // the index is 0
    llvm::Value* term = strides[k] == 1 ? dims[k] : cx.b().CreateMul(dims[k], cx.i64c(strides[k]), "", true, true);
    offset = offset ? cx.b().CreateAdd(offset, term, "", true, true) : term;
  }
  return offset ? offset : cx.i64c(0);
}

std::vector<llvm::Value*> unflatten(LoweringContext& cx, llvm::Value* flat, const Shape& shape) {
  std::vector<llvm::Value*> dims(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] == 1) {
      dims[k] = cx.i64c(0);
      continue;
    }
    dims[k] = k == 0 ? flat : cx.b().CreateURem(flat, cx.i64c(shape[k]));
    if (k > 0) flat = cx.b().CreateUDiv(flat, cx.i64c(shape[k]));
  }
  return dims;
}

Generator buffer_generator(LoweringContext& cx, Value v, const TensorType& t) {
  return [&cx, v, t](const ElementIndex& index) -> llvm::Value* {
    llvm::Value* base = cx.buffer(v);
    llvm::Value* offset = flat_offset(cx, index.dims, t.shape);
    if (index.width == 1) return cx.load(t.dtype, base, offset, 1);
    if (index.lane_axis < 0) return cx.splat(cx.load(t.dtype, base, offset, 1), index.width);
    if (index.lane_axis == t.rank() - 1) return cx.load(t.dtype, base, offset, index.width);
    return per_lane(cx, index, [&](const ElementIndex& one) {
      return cx.load(t.dtype, base, flat_offset(cx, one.dims, t.shape), 1);
    });
  };
}

ElementIndex broadcast_index(LoweringContext& cx, const ElementIndex& index, const Shape& result,
                             const Shape& operand) {
  const size_t lead = result.size() - operand.size();
  ElementIndex out{{}, index.width, -1};
  for (size_t k = 0; k < operand.size(); ++k) {
    const bool broadcast = operand[k] == 1 && result[lead + k] != 1;
    out.dims.push_back(broadcast ? cx.i64c(0) : index.dims[lead + k]);
    if (!broadcast && index.lane_axis == static_cast<int>(lead + k)) out.lane_axis = static_cast<int>(k);
  }
  return out;
}

llvm::Value* per_lane(LoweringContext& cx, const ElementIndex& index,
                      const std::function<llvm::Value*(const ElementIndex&)>& scalar) {
  if (index.width == 1) return scalar(index);
  if (index.lane_axis < 0) return cx.splat(scalar(ElementIndex{index.dims, 1, -1}), index.width);
  llvm::Value* vec = nullptr;
  for (int lane = 0; lane < index.width; ++lane) {
    llvm::Value* s = scalar(with_lane(index, cx, lane));
    if (!vec) vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(s->getType(), static_cast<unsigned>(index.width)));
    vec = cx.b().CreateInsertElement(vec, s, static_cast<uint64_t>(lane));
  }
  return vec;
}

void emit_elemental_loop(LoweringContext& cx, const std::string& name, const Shape& shape,
                         const std::vector<LoopOutput>& outputs) {
  if (numel(shape) == 0 || outputs.empty()) return;
  const auto store_all = [&](const std::vector<llvm::Value*>& offsets, const ElementIndex& index) {
    std::vector<llvm::Value*> values;
    for (const LoopOutput& o : outputs) values.push_back(o.gen(index));
    for (size_t i = 0; i < outputs.size(); ++i)
      cx.store(outputs[i].dtype, cx.buffer(outputs[i].value), offsets[0], values[i]);
  };
  if (shape.empty()) {
    store_all({cx.i64c(0)}, ElementIndex{});
    return;
  }
  const size_t rank = shape.size();
  const int64_t inner = shape.back();
  const int64_t rows = numel(shape) / inner;
  const int width = cx.vector_width();
  const int64_t vector_end = inner - inner % width;
  cx.parallel_for(name, rows, LoweringContext::grain_for(inner * static_cast<int64_t>(outputs.size())),
                  [&](llvm::Value* begin, llvm::Value* end) {
                    cx.for_range(begin, end, 1, [&](llvm::Value* row) {
                      std::vector<llvm::Value*> dims = unflatten(cx, row, Shape(shape.begin(), shape.end() - 1));
                      dims.push_back(nullptr);  // the innermost index, set per step below
                      llvm::Value* row_offset = cx.b().CreateMul(row, cx.i64c(inner), "", true, true);
                      const auto emit_at = [&](llvm::Value* j, int w) {
                        dims[rank - 1] = j;
                        store_all({cx.b().CreateAdd(row_offset, j, "", true, true)},
                                  ElementIndex{dims, w, w > 1 ? static_cast<int>(rank - 1) : -1});
                      };
                      cx.for_range(0, vector_end, width, [&](llvm::Value* j) { emit_at(j, width); });
                      // The remainder as one narrower vector: less code than a scalar loop, and
                      // LLVM legalizes odd widths without touching memory past the row.
                      if (vector_end < inner) emit_at(cx.i64c(vector_end), static_cast<int>(inner - vector_end));
                    });
                  });
}

}  // namespace kiln::compiler
