#include "engine/ir/graph.h"

#include <unordered_set>

#include "engine/ir/error.h"
#include "engine/ir/init_scheme.h"
#include "engine/ir/op_def.h"

namespace kiln {

std::string_view value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::input: return "input";
    case ValueKind::param: return "param";
    case ValueKind::state: return "state";
    case ValueKind::result: return "result";
  }
  return "?";
}

const std::string& Node::op() const { return def->name; }

bool same_computation(const Graph& a, const Graph& b) {
  if (&a == &b) return true;
  if (a.num_values() != b.num_values() || a.nodes().size() != b.nodes().size() ||
      a.declarations() != b.declarations() || a.outputs() != b.outputs())
    return false;
  // Values are numbered in the order they are made, so alike graphs number theirs alike.
  for (Value v : a.declarations()) {
    const ValueInfo &x = a.value(v), &y = b.value(v);
    if (x.kind != y.kind || !(x.type == y.type) || !(x.attrs == y.attrs)) return false;
  }
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node &x = a.nodes()[i], &y = b.nodes()[i];
    if (x.def != y.def || x.operands != y.operands || x.results != y.results || !(x.attrs == y.attrs)) return false;
    for (Value r : x.results)
      if (!(a.type(r) == b.type(r))) return false;
    if ((x.body == nullptr) != (y.body == nullptr) || (x.body && !same_computation(*x.body, *y.body))) return false;
  }
  return true;
}

std::string node_label(const Graph& g, const Node& n) {
  const std::string origin = origin_phrase(n.loc);
  const std::string first = n.results.empty() ? std::string() : "%" + g.name_of(n.results[0]) + " ";
  return first + "(" + n.op() + (origin.empty() ? "" : " " + origin) + ")";
}

std::string numbered(const char* prefix, size_t n) {
  // Appended, not "i" + to_string(n): GCC 12 warns -Wrestrict on that, wrongly.
  std::string name = prefix;
  name += std::to_string(n);
  return name;
}

bool is_identifier(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

void check_identifier(std::string_view s, std::string_view what) {
  if (!is_identifier(s))
    throw Error("invalid " + std::string(what) + " name '" + std::string(s) + "' (letters, digits, '_' and '.')");
}

Graph::Graph(std::string name) : name_(std::move(name)) { check_identifier(name_, "graph"); }

void Graph::set_name(std::string name) {
  check_identifier(name, "graph");
  name_ = std::move(name);
}

void Graph::check_free_name(const std::string& name) const {
  check_identifier(name, "value");
  if (by_name_.count(name)) throw Error("value %" + name + " is already defined");
}

Value Graph::add_value(ValueInfo info) {
  check_free_name(info.name);
  const Value v{static_cast<int32_t>(values_.size())};
  by_name_.emplace(info.name, v.id);
  values_.push_back(std::move(info));
  return v;
}

Value Graph::declare(ValueKind kind, const std::string& name, TensorType type, Attrs attrs) {
  if (kind == ValueKind::result) throw Error("declare: a result is not a declaration");
  const std::string decl = std::string(value_kind_name(kind)) + " %" + name;
  try {
    check_countable(type);
  } catch (const Error& e) {
    throw Error(decl + ": " + e.what());
  }
  ValueInfo info{name, std::move(type), kind, -1, std::move(attrs)};
  // An init the verifier would refuse (init_scheme.h) is refused here, so what a builder declares verifies.
  if (kind != ValueKind::input && info.attrs.has("init")) {
    try {
      (void)init_of(info);
    } catch (const Error& e) {
      throw Error(decl + ": " + e.what());
    }
  }
  const Value v = add_value(std::move(info));
  decls_.push_back(v);
  return v;
}

int32_t Graph::add_node(const OpDef* def, std::vector<Value> operands, Attrs attrs,
                        const std::vector<TensorType>& result_types, const std::vector<std::string>& result_names,
                        std::shared_ptr<const Graph> body, Location loc) {
  const auto node_id = static_cast<int32_t>(nodes_.size());
  Node node{def, std::move(operands), std::move(attrs), {}, std::move(body), std::move(loc)};
  // Every name is settled before the first result is added, so a bad one leaves the graph as it was.
  // A set, not a search of the list per name: a horizontal fusion has thousands of results.
  std::vector<std::string> names(result_types.size());
  std::unordered_set<std::string> taken;
  for (size_t i = 0; i < names.size() && i < result_names.size(); ++i) {
    if (result_names[i].empty()) continue;
    check_free_name(result_names[i]);
    if (!taken.insert(result_names[i]).second) throw Error("value %" + result_names[i] + " is already defined");
    names[i] = result_names[i];
  }
  for (std::string& name : names)
    while (name.empty()) {
      name = fresh_name();
      if (!taken.insert(name).second) name.clear();
    }
  for (size_t i = 0; i < names.size(); ++i)
    node.results.push_back(add_value({std::move(names[i]), result_types[i], ValueKind::result, node_id, {}}));
  if (def->side_effect && !node.operands.empty()) written_.insert(node.operands.front().id);
  nodes_.push_back(std::move(node));
  return node_id;
}

void Graph::add_output(Value v) {
  if (!v.valid() || static_cast<size_t>(v.id) >= values_.size()) throw Error("output: invalid value");
  outputs_.push_back(v);
}

void Graph::merge_location(int32_t node, const Location& loc) { nodes_.at(static_cast<size_t>(node)).loc.merge(loc); }

void Graph::rename(Value v, const std::string& name) {
  check_free_name(name);
  ValueInfo& info = values_.at(static_cast<size_t>(v.id));
  by_name_.erase(info.name);
  by_name_.emplace(name, v.id);
  info.name = name;
}

std::optional<Value> Graph::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) return std::nullopt;
  return Value{it->second};
}

std::vector<Value> Graph::declarations(ValueKind kind) const {
  std::vector<Value> out;
  for (Value v : decls_)
    if (value(v).kind == kind) out.push_back(v);
  return out;
}

std::string Graph::fresh_name(std::string_view hint) const {
  if (hint.empty()) {
    while (by_name_.count(std::to_string(next_number_))) ++next_number_;
    return std::to_string(next_number_++);
  }
  std::string base(hint);
  if (!by_name_.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string cand = base + "_" + std::to_string(i);
    if (!by_name_.count(cand)) return cand;
  }
}

}  // namespace kiln
