#pragma once
// Reverse-mode autodiff, graph to graph: appends the backward pass of `loss` to
// the same graph (one joint graph, so later passes see forward and backward
// together) and returns the gradient of `loss` with respect to each of `wrt`.
#include <vector>

#include "engine/ir/graph.h"

namespace kiln {

// `loss` must be an f32 scalar; each of `wrt` an f32 value of the graph. Each
// returned gradient has its wrt's type and is named "<wrt name>.grad". Nodes are
// emitted only for paths from `wrt` to `loss`; a wrt that `loss` does not depend
// on gets a zero gradient. Fan-out gradients are summed; integer and bool operands
// (indices, masks) get none; stop_gradient cuts a path. If a path crosses ops that
// have no gradient rule, throws kiln::Error naming every such op, and the graph is
// left unchanged.
std::vector<Value> grad(Graph& g, Value loss, const std::vector<Value>& wrt);

}  // namespace kiln
