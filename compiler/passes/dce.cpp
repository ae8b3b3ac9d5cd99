// Dead code elimination: the roots are the outputs and the side-effecting nodes
// (assign); a node is live if a root depends on one of its results. Dead nodes are
// dropped; declarations stay even when unused (executables bind them by name).
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

Graph dce(const Graph& g) {
  const auto& nodes = g.nodes();
  std::vector<bool> live_value(g.num_values(), false);
  for (Value v : g.outputs()) live_value[static_cast<size_t>(v.id)] = true;
  std::vector<bool> live_node(nodes.size(), false);
  // Operands come before their users, so one backward sweep finds every live node.
  for (size_t i = nodes.size(); i-- > 0;) {
    bool live = nodes[i].def->side_effect;
    for (Value r : nodes[i].results) live = live || live_value[static_cast<size_t>(r.id)];
    if (!live) continue;
    live_node[i] = true;
    for (Value v : nodes[i].operands) live_value[static_cast<size_t>(v.id)] = true;
  }
  GraphRewriter rw(g);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (live_node[i]) rw.copy(i);
  return rw.finish();
}

}  // namespace kiln::compiler
