#include "engine/ir/builder.h"

#include <algorithm>

#include "engine/ir/error.h"
#include "engine/ir/fusion_kind.h"

namespace kiln {

std::string op_signature(const std::string& op, const std::vector<TensorType>& operand_types) {
  std::string s = op + "(";
  for (size_t i = 0; i < operand_types.size(); ++i) {
    if (i) s += ", ";
    s += type_str(operand_types[i]);
  }
  return s + ")";
}

std::vector<TensorType> body_result_types(const Graph& body, const std::vector<TensorType>& operand_types,
                                          bool holds_parts) {
  const std::vector<Value>& decls = body.declarations();
  if (decls.size() != operand_types.size())
    throw Error("body @" + body.name() + " declares " + std::to_string(decls.size()) + " input(s) for " +
                std::to_string(operand_types.size()) + " operand(s)");
  for (size_t i = 0; i < decls.size(); ++i) {
    const ValueInfo& info = body.value(decls[i]);
    if (info.kind != ValueKind::input)
      throw Error("body @" + body.name() + " declares " + std::string(value_kind_name(info.kind)) + " %" + info.name +
                  " (a body has only inputs)");
    if (!(info.type == operand_types[i]))
      throw Error("body input %" + info.name + " is " + type_str(info.type) + " but operand " + std::to_string(i) +
                  " is " + type_str(operand_types[i]));
  }
  // A horizontal fusion's body is its parts, each a loop fusion (one level deep);
  // every other body holds plain ops.
  for (const Node& n : body.nodes()) {
    if (!n.def) continue;
    if (holds_parts && !(n.body && fusion_kind_of(n) == FusionKind::loop))
      throw Error("body @" + body.name() + " holds a '" + n.op() +
                  "' node (a horizontal fusion's body holds loop fusions only)");
    if (!holds_parts && (n.def->side_effect || n.def->has_body))
      throw Error("body @" + body.name() + " holds a '" + n.op() + "' node (bodies hold plain ops only)");
  }
  if (body.outputs().empty()) throw Error("body @" + body.name() + " has no outputs");
  std::vector<TensorType> types;
  for (Value v : body.outputs()) types.push_back(body.type(v));
  return types;
}

std::vector<TensorType> infer_result_types(const OpDef& def, const std::vector<TensorType>& operand_types,
                                           const Attrs& attrs, const Graph* body) {
  const int n = static_cast<int>(operand_types.size());
  if (n < def.min_operands || (def.max_operands >= 0 && n > def.max_operands)) {
    std::string want = def.max_operands < 0 ? "at least " + std::to_string(def.min_operands)
                       : def.min_operands == def.max_operands
                           ? std::to_string(def.min_operands)
                           : std::to_string(def.min_operands) + " to " + std::to_string(def.max_operands);
    throw Error(op_signature(def.name, operand_types) + ": expects " + want + " operand(s), got " +
                std::to_string(n));
  }
  try {
    if (def.has_body) {
      if (!body) throw Error("needs a body graph");
      const Attr* kind = attrs.find("kind");
      const bool horizontal = kind && std::holds_alternative<std::string>(*kind) &&
                              std::get<std::string>(*kind) == fusion_kind_name(FusionKind::horizontal);
      return body_result_types(*body, operand_types, horizontal);
    }
    std::vector<TensorType> types = def.infer(operand_types, attrs);
    // Broadcasting [7,1] with [2^62] makes a result no tensor can have.
    for (const TensorType& t : types) check_countable(t);
    return types;
  } catch (const Error& e) {
    throw Error(op_signature(def.name, operand_types) + ": " + e.what());
  }
}

std::vector<Value> Builder::emit(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                                 const std::vector<std::string>& names) {
  return emit_node(op, operands, attrs, names, nullptr);
}

std::vector<Value> Builder::emit_fusion(std::shared_ptr<const Graph> body, const std::vector<Value>& operands,
                                        const Attrs& attrs, const std::vector<std::string>& names) {
  if (!body) throw Error("fusion: no body");
  // A fusion stands for its body: it has all of its nodes' origins, but for
  // constants (nodes of no operand), which fusion copies into every kernel that
  // reads them and CSE shares across the model: theirs name no part of it.
  const Location outer = loc_;
  const bool only_constants =
      std::all_of(body->nodes().begin(), body->nodes().end(), [](const Node& n) { return n.operands.empty(); });
  for (const Node& n : body->nodes())
    if (only_constants || !n.operands.empty()) loc_.merge(n.loc);
  std::vector<Value> results;
  try {
    results = emit_node("fusion", operands, attrs, names, std::move(body));
  } catch (...) {
    loc_ = outer;
    throw;
  }
  loc_ = outer;
  return results;
}

std::vector<Value> Builder::emit_node(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                                      const std::vector<std::string>& names, std::shared_ptr<const Graph> body) {
  const OpDef* def = OpRegistry::global().find(op);
  if (!def) throw Error("unknown op '" + op + "'");
  std::vector<TensorType> operand_types;
  for (Value v : operands) {
    if (!v.valid() || static_cast<size_t>(v.id) >= g_.num_values())
      throw Error(op + ": operand is not a value of graph @" + g_.name());
    operand_types.push_back(g_.type(v));
  }
  Attrs full;
  try {
    full = complete_attrs(*def, attrs);
  } catch (const Error& e) {
    throw Error(op_signature(op, operand_types) + ": " + e.what());
  }
  const std::vector<TensorType> result_types = infer_result_types(*def, operand_types, full, body.get());
  if (def->side_effect && !operands.empty()) check_write_target(op, operand_types, operands[0]);
  std::vector<std::string> result_names;
  for (size_t i = 0; i < result_types.size(); ++i)
    result_names.push_back(i < names.size() && !names[i].empty() ? g_.fresh_name(names[i]) : std::string());
  const int32_t id = g_.add_node(def, operands, std::move(full), result_types, result_names, std::move(body), loc_);
  return g_.nodes()[static_cast<size_t>(id)].results;
}

Builder::Scope::Scope(Builder& b, std::string_view name) : b_(b), saved_(b.loc_) {
  check_identifier(name, "scope");
  const std::string parent = common_scope(saved_.scopes);
  const std::string_view parent_forward = forward_scope(parent);
  std::string scope = parent_forward.empty() ? std::string(name) : std::string(parent_forward) + "." + std::string(name);
  if (is_backward_scope(parent)) scope = backward_scope(scope);
  b_.loc_.scopes = {std::move(scope)};
}

// The verifier's rules for a write (assign), checked before the node is added.
void Builder::check_write_target(const std::string& op, const std::vector<TensorType>& operand_types,
                                 Value target) const {
  const ValueInfo& info = g_.value(target);
  if (info.kind != ValueKind::param && info.kind != ValueKind::state)
    throw Error(op_signature(op, operand_types) + ": target %" + info.name + " is not a param or state");
  if (g_.is_written(target))
    throw Error(op_signature(op, operand_types) + ": %" + info.name + " is assigned more than once");
}

Value Builder::emit1(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                     const std::string& name) {
  std::vector<Value> r = emit(op, operands, attrs, {name});
  if (r.size() != 1) throw Error(op + ": expected one result, op has " + std::to_string(r.size()));
  return r[0];
}

}  // namespace kiln
