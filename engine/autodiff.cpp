#include "engine/autodiff.h"

#include <set>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln {
namespace {

bool is_float(const Graph& g, Value v) { return g.type(v).dtype == DType::f32; }

// Values that depend on some wrt through float data (what a gradient can flow back to).
std::vector<bool> depends_on_wrt(const Graph& g, const std::vector<Value>& wrt) {
  std::vector<bool> dep(g.num_values(), false);
  for (Value w : wrt) dep[static_cast<size_t>(w.id)] = true;
  for (const Node& n : g.nodes()) {
    bool any = false;
    for (Value v : n.operands) any = any || (dep[static_cast<size_t>(v.id)] && is_float(g, v));
    for (Value r : n.results) dep[static_cast<size_t>(r.id)] = any && is_float(g, r);
  }
  return dep;
}

// Values that `loss` depends on (walking producers backwards).
std::vector<bool> reaches_loss(const Graph& g, Value loss) {
  std::vector<bool> need(g.num_values(), false);
  need[static_cast<size_t>(loss.id)] = true;
  for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
    bool any = false;
    for (Value r : it->results) any = any || need[static_cast<size_t>(r.id)];
    if (any)
      for (Value v : it->operands) need[static_cast<size_t>(v.id)] = true;
  }
  return need;
}

}  // namespace

std::vector<Value> grad(Graph& g, Value loss, const std::vector<Value>& wrt, Value seed) {
  const TensorType& lt = g.type(loss);
  if (lt.dtype != DType::f32 || lt.rank() != 0)
    throw Error("grad: loss %" + g.name_of(loss) + " must be an f32 scalar, got " + type_str(lt));
  if (seed.valid() && !(g.type(seed) == lt))
    throw Error("grad: seed %" + g.name_of(seed) + " must be an f32 scalar like the loss, got " + type_str(g.type(seed)));
  for (Value w : wrt)
    if (!is_float(g, w)) throw Error("grad: cannot differentiate with respect to %" + g.name_of(w) + " of type " +
                                     type_str(g.type(w)) + " (only f32 values have gradients)");

  const std::vector<bool> dep = depends_on_wrt(g, wrt);
  const std::vector<bool> need = reaches_loss(g, loss);
  auto on_path = [&](Value v) { return dep[static_cast<size_t>(v.id)] && need[static_cast<size_t>(v.id)]; };

  // Nodes that carry a gradient from loss back toward some wrt, newest first.
  // Check them all for rules before emitting anything, so a failure leaves g as it was.
  const size_t forward_nodes = g.nodes().size();
  std::vector<size_t> backward_order;
  std::set<std::string> missing;
  for (size_t i = forward_nodes; i-- > 0;) {
    const Node& n = g.nodes()[i];
    bool carries = false;
    for (Value r : n.results) carries = carries || on_path(r);
    if (!carries) continue;
    backward_order.push_back(i);
    if (!n.def->gradient) missing.insert(n.op());
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string& op : missing) {
      if (!list.empty()) list += ", ";
      list += op;
    }
    throw Error("grad: no gradient rule for op(s) on the path from the wrt values to %" + g.name_of(loss) + ": " +
                list);
  }

  // A gradient's nodes are the backward of the node they differentiate
  // ("encoder.0.ffn (backward)"); the seed and untouched gradients, of the loss's.
  const Location loss_backward =
      g.value(loss).kind == ValueKind::result ? backward_of(g.producer(loss).loc) : Location{};
  Builder b(g);
  b.set_location(loss_backward);
  const auto first_new_value = static_cast<int32_t>(g.num_values());
  std::vector<Value> grads(g.num_values());
  grads[static_cast<size_t>(loss.id)] =
      seed.valid() ? seed : b.emit1("fill", {}, {{"shape", Shape{}}, {"value", 1.0}}, "loss.seed");

  for (size_t i : backward_order) {
    const Node& node = g.nodes()[i];
    std::vector<Value> result_grads;
    bool any = false;
    for (Value r : node.results) {
      const Value gr = static_cast<size_t>(r.id) < grads.size() ? grads[static_cast<size_t>(r.id)] : Value{};
      result_grads.push_back(gr);
      any = any || gr.valid();
    }
    if (!any) continue;
    b.set_location(backward_of(node.loc));
    const std::vector<Value> operand_grads = node.def->gradient(b, node, result_grads);
    for (size_t k = 0; k < node.operands.size() && k < operand_grads.size(); ++k) {
      const Value x = node.operands[k];
      const Value gx = operand_grads[k];
      if (!gx.valid() || !on_path(x)) continue;
      if (!(g.type(gx) == g.type(x)))
        throw Error("grad: the rule of '" + node.op() + "' gave a gradient of type " + type_str(g.type(gx)) +
                    " for operand " + std::to_string(k) + " of type " + type_str(g.type(x)));
      if (grads.size() < g.num_values()) grads.resize(g.num_values());
      Value& acc = grads[static_cast<size_t>(x.id)];
      acc = acc.valid() ? b.emit1("add", {acc, gx}) : gx;
    }
  }

  // Name each gradient "<wrt>.grad": rename the value this call created, or copy
  // it with identity where it is not ours to rename (shared by two wrt, or older).
  std::vector<Value> out;
  std::set<int32_t> renamed;
  for (Value w : wrt) {
    const Value gw = grads[static_cast<size_t>(w.id)];
    const std::string name = g.fresh_name(g.name_of(w) + ".grad");
    b.set_location(gw.valid() && g.value(gw).kind == ValueKind::result ? g.producer(gw).loc : loss_backward);
    if (!gw.valid()) {
      out.push_back(b.emit1("fill", {}, {{"shape", g.type(w).shape}, {"value", 0.0}}, name));
    } else if (gw.id >= first_new_value && renamed.insert(gw.id).second) {
      g.rename(gw, name);
      out.push_back(gw);
    } else {
      out.push_back(b.emit1("identity", {gw}, {}, name));
    }
  }
  return out;
}

}  // namespace kiln
