#include "engine/ir/verifier.h"

#include <algorithm>
#include <set>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/fusion_kind.h"
#include "engine/ir/init_scheme.h"
#include "engine/ir/op_def.h"

namespace kiln {

static std::string node_label(const Graph& g, const Node& n, size_t index) {
  std::string s = "node " + std::to_string(index);
  if (!n.results.empty()) s += " (%" + g.name_of(n.results[0]) + ")";
  return s + " '" + (n.def ? n.def->name : std::string("?")) + "'";
}

// "%m (matmul)": a body node, in verify_fusion's messages.
static std::string body_node(const Graph& body, const Node& n) {
  if (n.results.empty()) return "'" + n.op() + "'";
  return "%" + body.name_of(n.results[0]) + " (" + n.op() + ")";
}

void verify_fusion(const Attrs& attrs, const Graph& body) {
  const FusionRoles roles = fusion_roles(attrs);  // an unknown kind throws, naming the kinds
  const std::string kind(fusion_kind_name(roles.kind));
  const auto fail = [&kind](const std::string& why) { throw Error("fusion of kind " + kind + ": " + why); };
  const auto size = static_cast<int64_t>(body.nodes().size());
  std::vector<bool> has_role(body.nodes().size(), false);
  const auto node_at = [&](const std::string& role, int64_t i) -> const Node& {
    if (i < 0 || i >= size)
      fail(role + " " + std::to_string(i) + " is not a node of its body (it has " + std::to_string(size) + ")");
    has_role[static_cast<size_t>(i)] = true;
    return body.nodes()[static_cast<size_t>(i)];
  };
  // Each kind has its roles and no others.
  const bool has_hero = roles.kind == FusionKind::input || roles.kind == FusionKind::epilogue;
  if (has_hero && roles.hero < 0)
    fail("it names no hero, the kernel op it is built around (hero=N: its index in the body)");
  if (!has_hero && roles.hero >= 0) {
    std::string why = "it has no hero, but names hero ";
    why += std::to_string(roles.hero);
    fail(why);
  }
  if (roles.kind == FusionKind::row && roles.reductions.empty())
    fail("it names no reductions (reductions=[N, ...]: their indices in the body)");
  if (roles.kind != FusionKind::row && !roles.reductions.empty()) fail("it has no reductions, but names some");
  if (roles.kind != FusionKind::epilogue && roles.column_sum >= 0) fail("it has no column sum, but names one");
  if (roles.kind != FusionKind::epilogue && roles.stores_product) fail("it has no product to store");
  // Its parts are loop fusions, each verified as a node of its body.
  if (roles.kind == FusionKind::horizontal) return;
  // A fused concat chooses among its operands at every element.
  if (body.nodes().size() > 1)
    for (const Node& n : body.nodes())
      if (n.op() == "concat" && n.operands.size() > kMaxFusedConcatOperands)
        fail(body_node(body, n) + " is a concat of " + std::to_string(n.operands.size()) +
             " operands; a fused concat takes at most " + std::to_string(kMaxFusedConcatOperands) +
             " (a wider one is a kernel of its own)");
  const std::vector<Value>& outs = body.outputs();
  const auto is_output = [&outs](Value v) { return std::find(outs.begin(), outs.end(), v) != outs.end(); };
  const Shape& shape = body.type(outs.front()).shape;
  switch (roles.kind) {
    case FusionKind::loop:
      for (Value v : outs)
        if (!(body.type(v).shape == shape))
          fail("its outputs differ in shape: " + shape_str(shape) + " and " + shape_str(body.type(v).shape));
      break;
    case FusionKind::input: {
      const Node& hero = node_at("hero", roles.hero);
      if (!hero.def->kernel_op()) fail("its hero " + body_node(body, hero) + " is not a kernel op");
      if (outs != hero.results) fail("its outputs are not the results of its hero " + body_node(body, hero));
      break;
    }
    case FusionKind::row:
      for (int64_t i : roles.reductions) {
        const Node& r = node_at("reduction", i);
        if (!is_row_reduction_of(body, r, shape))
          fail(body_node(body, r) + " is not a reduction over the last axis of " + shape_str(shape));
      }
      for (Value v : outs)
        if (!(body.type(v).shape == shape) || body.value(v).kind != ValueKind::result ||
            !body.producer(v).def->elemental())
          fail("its output %" + body.name_of(v) + " is not an elemental value of shape " + shape_str(shape));
      break;
    case FusionKind::epilogue: {
      const Node& hero = node_at("hero", roles.hero);
      if (!hero.def->takes_epilogue) fail("its hero " + body_node(body, hero) + " takes no epilogue");
      if (hero.results.size() != 1) fail("its hero " + body_node(body, hero) + " has several results");
      const Value product = hero.results[0];
      Value column_sum;
      if (roles.column_sum >= 0) {
        const Node& sum = node_at("column_sum", roles.column_sum);
        if (!is_column_sum_of_b(body, sum, hero) || body.value(hero.operands[1]).kind == ValueKind::result ||
            !is_output(sum.results[0]))
          fail(body_node(body, sum) + " is not an output summing the rows of " + body_node(body, hero) +
               "'s operand B, an input");
        column_sum = sum.results[0];
      }
      if (roles.stores_product != is_output(product))
        fail(roles.stores_product ? "it stores its product, but %" + body.name_of(product) + " is not an output"
                                  : "its product %" + body.name_of(product) + " is an output, but stores_product is "
                                    "not set");
      std::vector<Value> computed;  // the outputs the epilogue computes from the product
      for (Value v : outs)
        if (v != product && v != column_sum) computed.push_back(v);
      if (computed.empty()) fail("no output is computed from " + body_node(body, hero) + "'s result");
      if (!roles.stores_product && (computed.size() != 1 || !(body.type(computed.front()) == body.type(product))))
        fail("not one output of " + body_node(body, hero) + "'s type computed from its result (the product is "
             "written into that output's buffer unless stores_product is set)");
      for (Value v : computed)
        if (!(body.type(v).shape == body.type(product).shape))
          fail("its output %" + body.name_of(v) + " is not of " + body_node(body, hero) + "'s shape");
      break;
    }
    case FusionKind::horizontal:
      break;
  }
  // Every kernel op has its role: the rest are elemental, composed where they are read.
  for (size_t i = 0; i < body.nodes().size(); ++i) {
    const Node& n = body.nodes()[i];
    if (n.def->kernel_op() && !has_role[i])
      fail(body_node(body, n) +
           (roles.kind == FusionKind::loop ? " is not elemental" : " is a kernel op with no role in it"));
  }
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
      bool body_ok = true;
      if (n.body)
        for (const std::string& p : verify_problems(*n.body)) {
          problems.push_back(where + ": body: " + p);
          body_ok = false;
        }
      if (n.body && body_ok && !n.body->outputs().empty()) verify_fusion(full, *n.body);
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
