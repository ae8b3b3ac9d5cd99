// Dead code elimination: the nodes that do not run (engine/ir/liveness.h) are
// dropped; declarations stay even when unused (executables bind them by name).
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/liveness.h"

namespace kiln::compiler {

Graph dce(const Graph& g) {
  const auto& nodes = g.nodes();
  const std::vector<bool> live_node = live_nodes(g);
  GraphRewriter rw(g);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (live_node[i]) rw.copy(i);
  return rw.finish();
}

}  // namespace kiln::compiler
