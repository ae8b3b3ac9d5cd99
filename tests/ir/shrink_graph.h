#pragma once
// Shrinks a graph on which a check fails to a small one on which it still fails
// (delta debugging on graphs), to turn fuzzer findings into regression tests.
// Each round tries smaller variants and keeps every one that still fails:
//   - drop an output or an assign; put an output on its producer's operands
//     instead, or an assign's value;
//   - cut the graph at a node: its results become fresh inputs of their types
//     (named as they were), so what only fed it goes;
//   - replace a node by one of its operands where the types agree (an identity);
//   - shrink a size: every dim of that size, in the declarations and in shape
//     and size attributes, becomes 1 or half of it, if the graph still builds.
// Nodes and declarations that reach no output and no assign are dropped from
// every variant (if the failure needs them, they first become outputs). Rounds
// repeat until none of them shrinks the graph.
#include <functional>

#include "engine/ir/graph.h"

namespace kiln::test {

// Whether `g` still fails the way the original did. Must not throw.
using StillFails = std::function<bool(const Graph&)>;

struct ShrinkResult {
  Graph graph;
  int tries = 0;  // variants checked
  int kept = 0;   // of those, how many still failed and were kept
};

// `g` itself must fail. Stops after `max_tries` variants with the smallest so far.
ShrinkResult shrink_graph(const Graph& g, const StillFails& still_fails, int max_tries = 3000);

}  // namespace kiln::test
