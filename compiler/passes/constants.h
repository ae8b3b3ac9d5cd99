#pragma once
// What the passes know about constants. The IR holds constants as `fill` (a splat:
// every element one value), `iota` and `causal_mask`; there is no op for an
// arbitrary constant tensor, so folding produces splats only.
#include <optional>

#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"

namespace kiln::compiler {

// The element value of a `fill` result as its dtype holds it (rounded to f32,
// truncated to i32, 0 or 1 for bool); none for a value not produced by `fill`.
std::optional<double> splat_value(const Graph& g, Value v);

// Produced by an op with the `constant` trait (OpDef: no operands, a fixed
// tensor: fill, iota, causal_mask).
bool is_constant(const Graph& g, Value v);

// The tensor of a constant value, computed with its op's reference kernel.
Tensor constant_tensor(const Graph& g, Value v);

// A tensor of `type` whose every element is `value` (converted as `fill` converts).
Tensor splat_tensor(const TensorType& type, double value);

// The common value of all elements (bitwise equal, so -0.0 and 0.0 differ and a NaN
// matches only the same NaN), as a double; none for a non-splat or an empty tensor.
std::optional<double> common_value(const Tensor& t);

}  // namespace kiln::compiler
