#pragma once
// --check-numerics (TensorFlow's CheckNumerics, PyTorch's anomaly mode): a run
// checks every f32 value as it is made and stops at the first nan or +inf, naming
// the value, what made it and where the .kir text defines it. -inf passes: it is
// the additive attention mask's "nothing to attend to" and log_softmax's log 0; a
// real overflow to -inf becomes nan or +inf at the next op that mixes it.
#include <map>
#include <string>

#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"

namespace kiln {

// "nan at [2, 0]" for the first nan or +inf among the row-major elements of an
// f32 array of `shape`; "" if there is none.
std::string first_nonfinite(const float* data, const Shape& shape);
// The same for a tensor: "" unless it is f32 and holds one.
std::string first_nonfinite(const Tensor& t);

// Throws kiln::Error: "check-numerics: %y (f32[5,19]) holds nan at [2, 0], the
// run's first nan or inf; made by MAKER, defined at model.kir:7:8 by op 'softmax'".
// `source` is the graph as the user gave it (values are looked up by name; one a
// pass made has no place in the text).
[[noreturn]] void throw_nonfinite(const Graph& source, const std::string& value, const TensorType& type,
                                  const std::string& found, const std::string& maker);

// Checks every bound f32 declaration of `g` (before a run): the first nan or +inf
// throws, naming the input, param or state.
void check_declarations(const Graph& g, const std::map<std::string, Tensor>& bound);

}  // namespace kiln
