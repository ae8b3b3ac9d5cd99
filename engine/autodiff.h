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
//
// `seed`, when valid, is the gradient `loss` itself gets (an f32 scalar of the
// graph) instead of 1, so every gradient comes out multiplied by it: weighting a
// loss costs one scalar at the start of the backward pass, not a multiply per
// wrt value after it (where each would be ready only at the end: data-parallel
// training starts summing gradients while the backward pass still runs).
std::vector<Value> grad(Graph& g, Value loss, const std::vector<Value>& wrt, Value seed = {});

}  // namespace kiln
