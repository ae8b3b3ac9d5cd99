#pragma once
// A node with its graph, so emitters can read operand and result types.
#include <string>

#include "engine/ir/graph.h"

namespace kiln::compiler {

struct NodeRef {
  const Graph& graph;
  const Node& node;

  const std::string& op() const { return node.op(); }
  const Attrs& attrs() const { return node.attrs; }
  size_t num_operands() const { return node.operands.size(); }
  const TensorType& in(size_t i) const { return graph.type(node.operands[i]); }
  const TensorType& out(size_t i = 0) const { return graph.type(node.results[i]); }
};

}  // namespace kiln::compiler
