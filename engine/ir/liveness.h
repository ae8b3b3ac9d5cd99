#pragma once
// Which nodes of a graph run: those a root depends on, the roots being the
// outputs and the side-effecting nodes (assign). A dead node never runs in any
// backend, so what it would do (an integer division by zero, a nan) is nobody's
// concern, and dropping it (the compiler's dce) changes nothing observable.
#include <vector>

#include "engine/ir/graph.h"

namespace kiln {

// By node index.
std::vector<bool> live_nodes(const Graph& g);

}  // namespace kiln
