#include "engine/interpreter.h"

#include "engine/ir/error.h"
#include "engine/ir/liveness.h"
#include "engine/ir/op_def.h"
#include "engine/numerics.h"

namespace kiln {

namespace {

std::vector<Tensor> evaluate_body(const Graph& body, const std::vector<const Tensor*>& operands);

// A zero result tensor; its size comes from the graph, so a size over the memory
// limit is refused naming the value and the node that makes it.
Tensor result_tensor(const Graph& g, const Node& node, Value r) {
  try {
    return Tensor::zeros(g.type(r));
  } catch (const Error& e) {
    const std::string origin = origin_phrase(node.loc);
    const std::string at = origin.empty() ? "" : " " + origin;
    throw Error("%" + g.name_of(r) + " (op '" + node.op() + "'" + at + "): " + e.what());
  }
}

// One node's results from its operands: the op's reference kernel, or a fusion
// node's body run the same way.
std::vector<Tensor> evaluate_node(const Graph& g, const Node& node, const std::vector<const Tensor*>& in) {
  if (node.body) return evaluate_body(*node.body, in);
  if (!node.def->reference) throw Error("op '" + node.op() + "' has no reference kernel");
  bool all_empty = true;
  for (const Tensor* t : in) all_empty = all_empty && t->numel() == 0;
  std::vector<Tensor> results;
  for (Value r : node.results) {
    results.push_back(result_tensor(g, node, r));
    all_empty = all_empty && results.back().numel() == 0;
  }
  std::vector<Tensor*> out;
  for (Tensor& t : results) out.push_back(&t);
  // Zero-size results of zero-size operands need no kernel (and xtensor's
  // reducers do pointer arithmetic on the null data of zero-size arrays, which
  // UBSan rejects). Non-empty operands still go through the kernel, which may
  // reject them (e.g. scatter_add's out-of-range indices into a zero-size result).
  if (!all_empty) node.def->reference(KernelArgs{in, out, node.attrs});
  return results;
}

// Runs g's live nodes over `values` (by value id, declarations already set,
// unless `outer` holds a pointer for them: a fusion body reads its operands
// where they are, not copies), adding each assign's (target name, value) to
// `assigned` if given, and with check_numerics stopping at the first result
// that holds a nan or +inf.
void evaluate(const Graph& g, std::vector<Tensor>& values, const std::vector<const Tensor*>& outer,
              std::vector<std::pair<std::string, Value>>* assigned, bool check_numerics = false) {
  const std::vector<bool> live = live_nodes(g);
  for (size_t index = 0; index < g.nodes().size(); ++index) {
    if (!live[index]) continue;
    const Node& node = g.nodes()[index];
    if (node.def->side_effect) {  // assign: takes effect when the step ends
      if (assigned) assigned->emplace_back(g.name_of(node.operands[0]), node.operands[1]);
      continue;
    }
    std::vector<const Tensor*> in;
    for (Value v : node.operands) {
      const auto id = static_cast<size_t>(v.id);
      in.push_back(id < outer.size() && outer[id] ? outer[id] : &values[id]);
    }
    std::vector<Tensor> results = evaluate_node(g, node, in);
    for (size_t i = 0; i < node.results.size(); ++i) {
      const Value r = node.results[i];
      if (!(results[i].type() == g.type(r)))
        throw Error("reference kernel of '" + node.op() + "' produced " + type_str(results[i].type()) + " for %" +
                    g.name_of(r) + ", expected " + type_str(g.type(r)));
      if (check_numerics)
        if (const std::string found = first_nonfinite(results[i]); !found.empty())
          throw_nonfinite(g, g.name_of(r), g.type(r), found, "the interpreter's node " + std::to_string(index));
      values[static_cast<size_t>(r.id)] = std::move(results[i]);
    }
  }
}

std::vector<Tensor> evaluate_body(const Graph& body, const std::vector<const Tensor*>& operands) {
  std::vector<Tensor> values(body.num_values());
  std::vector<const Tensor*> outer(body.num_values(), nullptr);
  const std::vector<Value>& inputs = body.declarations();
  for (size_t i = 0; i < inputs.size(); ++i) outer[static_cast<size_t>(inputs[i].id)] = operands[i];
  evaluate(body, values, outer, nullptr);
  std::vector<Tensor> results;
  for (Value v : body.outputs()) {
    const auto id = static_cast<size_t>(v.id);
    results.push_back(outer[id] ? *outer[id] : values[id]);
  }
  return results;
}

}  // namespace

// Each tensor is held once: the declarations move into the run's values and
// back, and every value the run hands out (outputs, assigned values, the
// declarations returning to their bindings) is moved at its last use, copied
// before.
void Interpreter::execute() {
  std::vector<Tensor> values(graph_.num_values());
  for (Value v : graph_.declarations()) values[static_cast<size_t>(v.id)] = std::move(bound_.at(graph_.name_of(v)));
  std::vector<std::pair<std::string, Value>> assigned;
  try {
    evaluate(graph_, values, {}, &assigned, check_numerics_);
  } catch (...) {
    for (Value v : graph_.declarations()) bound_.at(graph_.name_of(v)) = std::move(values[static_cast<size_t>(v.id)]);
    throw;
  }
  // Where each handed-out value goes: outputs, then bindings (assigned or kept).
  std::vector<std::pair<Tensor*, Value>> sinks;
  outputs_.clear();
  for (Value v : graph_.outputs()) sinks.emplace_back(&outputs_[graph_.name_of(v)], v);
  std::map<std::string, Value> next_binding;
  for (Value v : graph_.declarations()) next_binding[graph_.name_of(v)] = v;
  for (const auto& [target, v] : assigned) next_binding[target] = v;
  for (const auto& [name, v] : next_binding) sinks.emplace_back(&bound_.at(name), v);
  std::vector<int> uses(values.size(), 0);
  for (const auto& [sink, v] : sinks) ++uses[static_cast<size_t>(v.id)];
  for (const auto& [sink, v] : sinks) {
    Tensor& t = values[static_cast<size_t>(v.id)];
    if (--uses[static_cast<size_t>(v.id)] == 0) *sink = std::move(t);
    else *sink = t;
  }
}

}  // namespace kiln
