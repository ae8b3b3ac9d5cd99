#pragma once
// The graphs the generated checks run a row's op in.
#include <map>
#include <string>
#include <vector>

#include "op_info.h"

namespace kiln::test {

// op(operands) {attrs}, through emit_fusion where the sample has a body.
std::vector<Value> emit_op(Builder& b, const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                           const std::shared_ptr<const Graph>& body = nullptr);

// The row's graph for a sample (row.build, else the op alone on inputs x0, x1,
// ... with its results as outputs), each operand and result passed through `wrap`.
Graph sample_graph(const OpInfo& row, const Sample& s, const Wrap& wrap);

// Leaves values as they are.
Value no_wrap(Builder& b, Value v);

// A wrap that multiplies by an input `one_<dtype>` bound to 1 (bool: logical_and
// with true): exact for every value (nan, infinities, -0), opaque to the passes
// (an input, not a constant), and elementwise, so fusion can absorb it on either
// side of the op. A fresh one per graph.
Wrap unit_wrap();

// A binding for every declaration of g: x<i> from the sample, the unit wrap's
// ones, params and state named x<i> too.
std::map<std::string, Tensor> sample_bindings(const Graph& g, const Sample& s);

// The name of operand i's input: x0, x1, ...
std::string operand_name(size_t i);

}  // namespace kiln::test
