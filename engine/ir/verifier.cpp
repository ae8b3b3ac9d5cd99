#include "engine/ir/verifier.h"

#include <set>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/fusion_kind.h"
#include "engine/ir/init_scheme.h"

namespace kiln {

static std::string node_label(const Graph& g, const Node& n, size_t index) {
  std::string s = "node " + std::to_string(index);
  if (!n.results.empty()) s += " (%" + g.name_of(n.results[0]) + ")";
  return s + " '" + (n.def ? n.def->name : std::string("?")) + "'";
}

std::vector<std::string> verify_problems(const Graph& g) {
  std::vector<std::string> problems;
  std::vector<bool> defined(g.num_values(), false);
  for (Value v : g.declarations()) {
    const ValueInfo& decl = g.value(v);
    if (decl.kind == ValueKind::result) problems.push_back("declaration %" + decl.name + " is a result");
    // An init the run would refuse is refused here already (a default one is
    // the run's to judge: a bound value needs none).
    if ((decl.kind == ValueKind::param || decl.kind == ValueKind::state) && decl.attrs.has("init")) {
      try {
        init_of(decl);
      } catch (const Error& e) {
        problems.push_back(std::string(value_kind_name(decl.kind)) + " %" + decl.name + ": " + e.what());
      }
    }
    defined[static_cast<size_t>(v.id)] = true;
  }
  std::set<int32_t> assigned;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    const std::string where = node_label(g, n, i);
    if (!n.def) {
      problems.push_back(where + ": no op definition");
      continue;
    }
    std::vector<TensorType> operand_types;
    bool operands_ok = true;
    for (Value v : n.operands) {
      if (!v.valid() || static_cast<size_t>(v.id) >= g.num_values() || !defined[static_cast<size_t>(v.id)]) {
        problems.push_back(where + ": operand is used before it is defined");
        operands_ok = false;
        continue;
      }
      operand_types.push_back(g.type(v));
    }
    for (Value r : n.results) {
      if (g.value(r).node != static_cast<int32_t>(i)) problems.push_back(where + ": result does not point back to it");
      defined[static_cast<size_t>(r.id)] = true;
    }
    if (!operands_ok) continue;
    try {
      const Attrs full = complete_attrs(*n.def, n.attrs);
      if (!(full == n.attrs)) problems.push_back(where + ": attributes are not complete (defaults missing)");
      if (n.def->has_body != (n.body != nullptr))
        throw Error(n.body ? "op '" + n.op() + "' takes no body" : "has no body");
      if (n.def->has_body && !parse_fusion_kind(full.get_string("kind")))
        throw Error("unknown fusion kind '" + full.get_string("kind") + "' (kinds: " + fusion_kind_names() + ")");
      if (n.body)
        for (const std::string& p : verify_problems(*n.body)) problems.push_back(where + ": body: " + p);
      const std::vector<TensorType> want = infer_result_types(*n.def, operand_types, full, n.body.get());
      if (want.size() != n.results.size()) {
        problems.push_back(where + ": has " + std::to_string(n.results.size()) + " results, inference gives " +
                           std::to_string(want.size()));
      } else {
        for (size_t r = 0; r < want.size(); ++r)
          if (!(want[r] == g.type(n.results[r])))
            problems.push_back(where + ": result %" + g.name_of(n.results[r]) + " is typed " +
                               type_str(g.type(n.results[r])) + " but inference gives " + type_str(want[r]));
      }
    } catch (const Error& e) {
      problems.push_back(where + ": " + e.what());
    }
    if (n.def->side_effect && !n.operands.empty()) {
      const ValueInfo& target = g.value(n.operands[0]);
      if (target.kind != ValueKind::param && target.kind != ValueKind::state)
        problems.push_back(where + ": target %" + target.name + " is not a param or state");
      if (!assigned.insert(n.operands[0].id).second)
        problems.push_back(where + ": %" + target.name + " is assigned more than once");
    }
  }
  for (Value v : g.outputs())
    if (!v.valid() || static_cast<size_t>(v.id) >= g.num_values())
      problems.push_back("output is not a value of the graph");
  return problems;
}

void verify(const Graph& g) {
  const std::vector<std::string> problems = verify_problems(g);
  if (problems.empty()) return;
  std::string msg = "graph @" + g.name() + " fails verification:";
  for (const std::string& p : problems) msg += "\n  " + p;
  throw Error(msg);
}

}  // namespace kiln
