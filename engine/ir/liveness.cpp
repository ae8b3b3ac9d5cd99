#include "engine/ir/liveness.h"

#include "engine/ir/op_def.h"

namespace kiln {

std::vector<bool> live_nodes(const Graph& g) {
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
  return live_node;
}

}  // namespace kiln
