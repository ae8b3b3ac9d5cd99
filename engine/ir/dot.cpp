#include "engine/ir/dot.h"

#include <algorithm>

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

// Node ids: n<node> for op nodes, n<node>_<body node> for a fusion body's nodes.
static std::string body_id(size_t node, size_t body_node) {
  std::string id = dot_id('n', static_cast<int64_t>(node));
  id += '_';
  id += std::to_string(body_node);
  return id;
}

// The DOT node that makes a value of `g`: its declaration, its op node, or, for a
// fusion's result, the body node that makes the matching body output.
static std::string source_id(const Graph& g, Value v) {
  const ValueInfo& info = g.value(v);
  if (info.kind != ValueKind::result) return dot_id('v', v.id);
  const auto node = static_cast<size_t>(info.node);
  const Node& n = g.nodes()[node];
  if (!n.body) return dot_id('n', info.node);
  const size_t k = static_cast<size_t>(std::find(n.results.begin(), n.results.end(), v) - n.results.begin());
  const Graph& body = *n.body;
  const Value inner = body.outputs()[k];
  const ValueInfo& inner_info = body.value(inner);
  if (inner_info.kind == ValueKind::result) return body_id(node, static_cast<size_t>(inner_info.node));
  // A body input passed straight through: the fusion's operand at its position.
  const std::vector<Value> inputs = body.declarations();
  const size_t m = static_cast<size_t>(std::find(inputs.begin(), inputs.end(), inner) - inputs.begin());
  return source_id(g, n.operands[m]);
}

static void edge(const std::string& from, const std::string& value_name, const std::string& to, std::string& out) {
  out += "  " + from + " -> " + to + " [label=" + quoted({"%" + value_name}) + "];\n";
}

static std::string op_label(const Graph& g, const Node& n, const std::string& note) {
  std::vector<std::string> label{n.op()};
  const std::string attrs = attrs_text(non_default_attrs(n));
  if (!attrs.empty()) label.push_back(attrs);
  std::string types;
  for (Value r : n.results) {
    if (!types.empty()) types += ", ";
    types += type_str(g.type(r));
  }
  if (!types.empty()) label.push_back(types);
  if (!note.empty()) label.push_back(note);
  return quoted(label);
}

static std::string fill(const DotMark* mark) {
  return mark && !mark->fill.empty() ? ", style=filled, fillcolor=\"" + mark->fill + "\"" : "";
}

// A fusion node as a cluster of its body's nodes; edges into it start at the
// outer values its body inputs stand for.
static void fusion_cluster(const Graph& g, size_t node, const DotMark* mark, std::string& out) {
  const Node& n = g.nodes()[node];
  const Graph& body = *n.body;
  const std::vector<Value> inputs = body.declarations();
  std::vector<std::string> title{"fusion " + attrs_text(non_default_attrs(n))};
  if (mark && !mark->note.empty()) title.push_back(mark->note);
  out += "  subgraph cluster_" + dot_id('n', static_cast<int64_t>(node)) + " {\n  label=" + quoted(title) +
         "; style=\"rounded" + (mark && !mark->fill.empty() ? ",filled\"; fillcolor=\"" + mark->fill + "\"" : "\"") +
         "; color=\"#6c757d\";\n";
  for (size_t i = 0; i < body.nodes().size(); ++i)
    out += "  " + body_id(node, i) + " [label=" + op_label(body, body.nodes()[i], "") +
           ", shape=ellipse, style=filled, fillcolor=white];\n";
  out += "  }\n";
  for (size_t i = 0; i < body.nodes().size(); ++i)
    for (Value operand : body.nodes()[i].operands) {
      const ValueInfo& info = body.value(operand);
      if (info.kind == ValueKind::result) {
        edge(body_id(node, static_cast<size_t>(info.node)), body.name_of(operand), body_id(node, i), out);
      } else {
        const size_t m = static_cast<size_t>(std::find(inputs.begin(), inputs.end(), operand) - inputs.begin());
        edge(source_id(g, n.operands[m]), g.name_of(n.operands[m]), body_id(node, i), out);
      }
    }
}

std::string to_dot(const Graph& g, const DotMarks& marks) {
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
    const auto it = marks.find(i);
    const DotMark* mark = it == marks.end() ? nullptr : &it->second;
    if (n.body) {
      fusion_cluster(g, i, mark, out);
      continue;
    }
    const std::string id = dot_id('n', static_cast<int64_t>(i));
    const bool writes = n.def && n.def->side_effect;
    out += "  " + id + " [label=" + op_label(g, n, mark ? mark->note : "") +
           (writes ? ", shape=octagon, style=dashed" : ", shape=ellipse" + fill(mark)) + "];\n";
    for (Value operand : n.operands) edge(source_id(g, operand), g.name_of(operand), id, out);
  }
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Value v = g.outputs()[i];
    const std::string id = dot_id('o', static_cast<int64_t>(i));
    out += "  " + id + " [label=" + quoted({"output %" + g.name_of(v)}) +
           ", shape=house, style=filled, fillcolor=\"#f8d7da\"];\n";
    edge(source_id(g, v), g.name_of(v), id, out);
  }
  return out + "}\n";
}

}  // namespace kiln
