// Common subexpression elimination: a node with the same op, the same operands
// (after earlier merges), equal attributes (Attrs::operator==), equal result
// types and (fusions) the same body text as an earlier node is replaced by that
// node's results, and that node takes its scopes too. Side-effecting
// nodes (assign) are never merged. dropout is merged like any op: its mask depends
// only on its operands and attributes (seed, key), so equal nodes draw equal masks.
#include <map>
#include <tuple>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/op_def.h"
#include "engine/ir/printer.h"

namespace kiln::compiler {

Graph cse(const Graph& g) {
  GraphRewriter rw(g);
  // (op, operand ids in the new graph, attributes) -> new nodes with them. The
  // attributes are in the key so that 20,000 slices of one gradient, each at its
  // own offset, are not each compared with all the others.
  std::map<std::tuple<std::string, std::vector<int32_t>, std::string>, std::vector<int32_t>> seen;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.def->side_effect) {
      rw.copy(i);
      continue;
    }
    std::vector<int32_t> operand_ids;
    for (Value v : rw.mapped_operands(n)) operand_ids.push_back(v.id);
    std::vector<int32_t>& candidates = seen[{n.op(), operand_ids, attrs_text(n.attrs)}];
    const Node* match = nullptr;
    for (int32_t id : candidates) {
      const Node& c = rw.target().nodes()[static_cast<size_t>(id)];
      bool same = c.attrs == n.attrs && c.results.size() == n.results.size() &&
                  (c.body == n.body || (c.body && n.body && print_kir(*c.body, {.locations = false}) == print_kir(*n.body, {.locations = false})));
      for (size_t r = 0; same && r < n.results.size(); ++r)
        same = rw.target().type(c.results[r]) == g.type(n.results[r]);
      if (same) match = &c;
      if (same) break;
    }
    if (match) {
      for (size_t r = 0; r < n.results.size(); ++r) rw.replace(n.results[r], match->results[r]);
      rw.merge_location(match->results.front(), n.loc);
    } else {
      rw.copy(i);
      candidates.push_back(static_cast<int32_t>(rw.target().nodes().size() - 1));
    }
  }
  return rw.finish();
}

}  // namespace kiln::compiler
