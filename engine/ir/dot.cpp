#include "engine/ir/dot.h"

#include "engine/ir/op_def.h"
#include "engine/ir/printer.h"

namespace kiln {

// A DOT string literal; "\n" separates label lines.
static std::string quoted(const std::vector<std::string>& lines) {
  std::string out = "\"";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\\n";
    for (char c : lines[i]) {
      if (c == '"' || c == '\\') out += '\\';
      out += c == '\n' ? ' ' : c;
    }
  }
  return out + "\"";
}

static std::string declaration_style(ValueKind kind) {
  switch (kind) {
    case ValueKind::input:
      return "shape=invhouse, style=filled, fillcolor=\"#cfe2ff\"";
    case ValueKind::param:
      return "shape=box, style=filled, fillcolor=\"#d4edda\"";
    case ValueKind::state:
      return "shape=cylinder, style=filled, fillcolor=\"#fff3cd\"";
    case ValueKind::result:
      break;
  }
  return "shape=ellipse";
}

// DOT node ids: v<value> for declarations, n<node> for op nodes, o<index> for outputs.
static std::string dot_id(char prefix, int64_t number) {
  std::string id(1, prefix);
  id += std::to_string(number);
  return id;
}

// The DOT node that produces a value: its declaration or its op node.
static std::string source_id(const Graph& g, Value v) {
  const ValueInfo& info = g.value(v);
  return info.kind == ValueKind::result ? dot_id('n', info.node) : dot_id('v', v.id);
}

static void edge(const Graph& g, Value from, const std::string& to, std::string& out) {
  out += "  ";
  out += source_id(g, from);
  out += " -> ";
  out += to;
  out += " [label=";
  out += quoted({"%" + g.name_of(from)});
  out += "];\n";
}

std::string to_dot(const Graph& g) {
  std::string out = "digraph ";
  out += quoted({g.name()});
  out += " {\n  node [fontname=\"monospace\", fontsize=10];\n  edge [fontname=\"monospace\", fontsize=9];\n";
  for (Value v : g.declarations()) {
    const ValueInfo& info = g.value(v);
    std::vector<std::string> label{std::string(value_kind_name(info.kind)) + " %" + info.name, type_str(info.type)};
    if (!info.attrs.empty()) label.push_back(attrs_text(info.attrs));
    out += "  " + dot_id('v', v.id) + " [label=" + quoted(label) + ", " + declaration_style(info.kind) + "];\n";
  }
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    const std::string id = dot_id('n', static_cast<int64_t>(i));
    std::vector<std::string> label{n.op()};
    const std::string attrs = attrs_text(non_default_attrs(n));
    if (!attrs.empty()) label.push_back(attrs);
    if (n.body) {  // a fusion: the ops of its body
      std::string ops;
      for (const Node& b : n.body->nodes()) ops += (ops.empty() ? "" : " ") + b.op();
      label.push_back(ops);
    }
    std::string types;
    for (Value r : n.results) {
      if (!types.empty()) types += ", ";
      types += type_str(g.type(r));
    }
    if (!types.empty()) label.push_back(types);
    const bool writes = n.def && n.def->side_effect;
    out += "  " + id + " [label=" + quoted(label) + (writes ? ", shape=octagon, style=dashed" : ", shape=ellipse") +
           "];\n";
    for (Value operand : n.operands) edge(g, operand, id, out);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Value v = g.outputs()[i];
    const std::string id = dot_id('o', static_cast<int64_t>(i));
    out += "  " + id + " [label=" + quoted({"output %" + g.name_of(v)}) +
           ", shape=house, style=filled, fillcolor=\"#f8d7da\"];\n";
    edge(g, v, id, out);
  }
  return out + "}\n";
}

}  // namespace kiln
