// horizontal-fusion (XLA's horizontal_loop_fusion.cc): the loop fusions whose
// every result only goes to assigns (an optimizer's update of each param and
// its moments, where it is not in the epilogue of the matmul that makes the
// param's gradient: biases, layer norms) become one `horizontal` fusion placed before the assigns at the
// end of the step: one kernel, one pass over each param, its gradient and its
// moments, instead of a kernel call per param. Its body holds the loop fusions
// themselves (its parts), reading the inputs they share once; codegen compiles
// each distinct part once (codegen/kernel_codegen.h).
#include <map>
#include <set>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/builder.h"
#include "engine/ir/fusion_kind.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

Graph horizontal_fusion(const Graph& g) {
  std::vector<bool> to_assign_only(g.num_values(), true);
  for (Value v : g.outputs()) to_assign_only[static_cast<size_t>(v.id)] = false;
  for (const Node& n : g.nodes())
    if (!n.def->side_effect)
      for (Value v : n.operands) to_assign_only[static_cast<size_t>(v.id)] = false;
  std::vector<const Node*> updates;
  std::set<const Node*> is_update;
  for (const Node& n : g.nodes()) {
    if (!n.body || fusion_kind_of(n) != FusionKind::loop) continue;
    bool sink = true;
    for (Value r : n.results) sink = sink && to_assign_only[static_cast<size_t>(r.id)];
    if (sink) {
      updates.push_back(&n);
      is_update.insert(&n);
    }
  }
  if (updates.size() < 2) return g;

  GraphRewriter rw(g);
  std::vector<size_t> assigns;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.def->side_effect)
      assigns.push_back(i);
    else if (!is_update.count(&n))
      rw.copy(i);
  }
  // The body holds the loops themselves, their bodies shared, reading inputs they may share.
  auto body = std::make_shared<Graph>("f_updates");
  Builder bb(*body);
  std::map<int32_t, Value> input_of;  // outer value id -> body input
  std::vector<Value> operands, replaced;
  for (const Node* u : updates) {
    std::vector<Value> args;
    for (Value outer : u->operands) {
      auto it = input_of.find(outer.id);
      if (it == input_of.end()) {
        it = input_of.emplace(outer.id, body->declare(ValueKind::input, numbered("p", operands.size()), g.type(outer)))
                 .first;
        operands.push_back(rw.map(outer));
      }
      args.push_back(it->second);
    }
    for (Value r : bb.emit_fusion(u->body, args, u->attrs)) body->add_output(r);
    replaced.insert(replaced.end(), u->results.begin(), u->results.end());
  }
  rw.emit_fusion(std::move(body), operands, {{"kind", std::string(fusion_kind_name(FusionKind::horizontal))}},
                 replaced);
  for (size_t a : assigns) rw.copy(a);
  return rw.finish();
}

}  // namespace kiln::compiler
