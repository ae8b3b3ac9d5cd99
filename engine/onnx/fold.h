#pragma once
// Constant folding at import: a node whose inputs are all import-time constants
// runs its converter on a scratch graph, which the interpreter evaluates, so the
// shape arithmetic torch exports (Shape -> Gather -> Div -> Concat -> Reshape)
// disappears using kiln's own kernels, with no second implementation of the ops.
#include <vector>

#include "engine/onnx/converters.h"

namespace kiln::onnx {

// The node's results as constants; `inputs` holds one constant per node input
// (absent optional inputs have none).
std::vector<Constant> fold_node(const ConvertFn& convert, const ::onnx::NodeProto& n,
                                const std::map<std::string, Constant>& inputs, int64_t opset);

}  // namespace kiln::onnx
