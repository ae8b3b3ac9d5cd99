#pragma once
// Constant folding at import: a node whose inputs are all import-time constants
// runs its converter on a scratch graph, which the interpreter evaluates, so the
// shape arithmetic torch exports (Shape -> Gather -> Div -> Concat -> Reshape)
// disappears using kiln's own kernels, with no second implementation of the ops.
#include <optional>
#include <vector>

#include "tools/onnx_import/converters.h"

namespace kiln::onnx {

// Folding is for small constants (shapes, indices, masks): a node whose constant
// inputs or whose results hold more elements than this stays an op of the graph,
// so import never holds several copies of a huge tensor (a 1 GB ConstantOfShape
// into a ReduceSum is a `fill` and a `sum`, computed when the graph runs).
constexpr int64_t kMaxFoldElements = int64_t{1} << 20;

// The node's results as constants, its inputs taken from `source` (where every
// input it has is a constant); nullopt if its inputs or results are larger than
// kMaxFoldElements. ONNX's integers are int64, kiln's i32: integer Add, Sub, Mul,
// Div, Neg, ReduceSum and ReduceMean whose result may not fit in i32 (judged from
// the operands' largest magnitudes) are a kiln::Error naming the node.
std::optional<std::vector<Constant>> fold_node(const ConvertFn& convert, const ::onnx::NodeProto& n,
                                               const ImportContext& source);

}  // namespace kiln::onnx
