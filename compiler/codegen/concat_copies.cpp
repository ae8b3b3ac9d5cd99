#include "compiler/codegen/concat_copies.h"

#include <algorithm>
#include <llvm/IR/GlobalVariable.h>

#include "engine/ir/op_def.h"

namespace kiln::compiler {

bool is_lone_concat(const Graph& k) {
  if (k.nodes().size() != 1 || k.nodes().front().op() != "concat") return false;
  const Node& concat = k.nodes().front();
  for (Value v : concat.operands)
    if (k.value(v).kind == ValueKind::result) return false;
  return k.outputs().size() == 1 && k.outputs().front() == concat.results.front();
}

void emit_concat_copies(LoweringContext& cx, const Graph& k, const std::string& symbol) {
  const Node& concat = k.nodes().front();
  const TensorType& out = k.type(concat.results.front());
  const auto axis = static_cast<size_t>(normalize_axis(concat.attrs.get_int("axis"), out.rank()));
  const auto axis_at = out.shape.begin() + static_cast<std::ptrdiff_t>(axis);
  const int64_t rows = numel(Shape(out.shape.begin(), axis_at));
  const int64_t inner = numel(Shape(axis_at + 1, out.shape.end()));
  const auto bytes = static_cast<int64_t>(dtype_size(out.dtype));
  std::vector<int64_t> slot_of(k.num_values(), -1);
  for (size_t i = 0; i < k.declarations().size(); ++i)
    slot_of[static_cast<size_t>(k.declarations()[i].id)] = static_cast<int64_t>(i);
  // {slot, bytes per row, byte offset in the result row} per operand with elements.
  std::vector<uint64_t> parts;
  int64_t offset = 0;
  for (Value v : concat.operands) {
    const int64_t row_bytes = k.type(v).shape[axis] * inner * bytes;
    if (row_bytes > 0)
      for (int64_t field : {slot_of[static_cast<size_t>(v.id)], row_bytes, offset})
        parts.push_back(static_cast<uint64_t>(field));
    offset += row_bytes;
  }
  const auto count = static_cast<int64_t>(parts.size() / 3);
  if (rows == 0 || count == 0) return;
  const int64_t out_row_bytes = offset;
  auto* table = new llvm::GlobalVariable(cx.module(), llvm::ArrayType::get(cx.i64(), parts.size()), /*isConstant=*/true,
                                         llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantDataArray::get(cx.context(), parts), symbol + ".parts");
  // Task t copies operand t % count's row t / count: a thread writes the result in order.
  const int64_t elements_per_task = std::max<int64_t>(1, out_row_bytes / bytes / count);
  cx.parallel_for(symbol + ".copies", rows * count, LoweringContext::grain_for(elements_per_task),
                  [&](llvm::Value* begin, llvm::Value* end) {
    auto& b = cx.b();
    llvm::Value* result = cx.buffer(concat.results.front());
    cx.for_range(begin, end, 1, [&](llvm::Value* t) {
      llvm::Value* row = b.CreateUDiv(t, cx.i64c(count), "row");
      llvm::Value* part = b.CreateMul(b.CreateURem(t, cx.i64c(count)), cx.i64c(3), "part");
      const auto field = [&](int i, const char* name) {
        llvm::Value* at = b.CreateInBoundsGEP(cx.i64(), table, b.CreateAdd(part, cx.i64c(i)));
        return b.CreateAlignedLoad(cx.i64(), at, llvm::Align(8), name);
      };
      llvm::Value* slot = field(0, "slot");
      llvm::Value* row_bytes = field(1, "row_bytes");
      llvm::Value* at = field(2, "at");
      llvm::Value* from = b.CreateInBoundsGEP(b.getInt8Ty(), cx.buffer_in_slot(slot), b.CreateMul(row, row_bytes));
      llvm::Value* to_row = b.CreateMul(row, cx.i64c(out_row_bytes));
      llvm::Value* to = b.CreateInBoundsGEP(b.getInt8Ty(), result, b.CreateAdd(to_row, at));
      b.CreateMemCpy(to, llvm::MaybeAlign(bytes), from, llvm::MaybeAlign(bytes), row_bytes);
    });
  });
}

}  // namespace kiln::compiler
