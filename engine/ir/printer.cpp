#include "engine/ir/printer.h"

#include "engine/ir/op_def.h"

namespace kiln {

Attrs non_default_attrs(const Node& n) {
  Attrs out;
  for (const auto& [name, value] : n.attrs) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : n.def->attrs)
      if (s.name == name) spec = &s;
    // Compared as text, so -0.0 is not taken for a 0.0 default (and nan matches nan).
    const bool is_default = spec && spec->default_value && attr_kind(*spec->default_value) == attr_kind(value) &&
                            attr_str(*spec->default_value) == attr_str(value);
    if (!is_default) out.set(name, value);
  }
  return out;
}

std::string attrs_text(const Attrs& attrs) {
  if (attrs.empty()) return {};
  std::string out = "{";
  for (const auto& [name, value] : attrs) {
    if (out.size() > 1) out += ", ";
    out += name;
    out += '=';
    out += attr_str(value);
  }
  return out + "}";
}

static void print_graph(const Graph& g, const std::string& indent, PrintOptions options, std::string& out);

static void print_node(const Graph& g, const Node& n, const std::string& indent, PrintOptions options,
                       std::string& out) {
  out += indent;
  out += "  ";
  for (size_t i = 0; i < n.results.size(); ++i) {
    out += i ? ", %" : "%";
    out += g.name_of(n.results[i]);
  }
  if (!n.results.empty()) out += " = ";
  out += n.op();
  out += '(';
  for (size_t i = 0; i < n.operands.size(); ++i) {
    out += i ? ", %" : "%";
    out += g.name_of(n.operands[i]);
  }
  out += ')';
  const std::string attrs = attrs_text(non_default_attrs(n));
  if (!attrs.empty()) {
    out += ' ';
    out += attrs;
  }
  for (size_t i = 0; i < n.results.size(); ++i) {
    out += i ? ", " : " : ";
    out += type_str(g.type(n.results[i]));
  }
  if (options.locations && !n.loc.scopes.empty()) {
    out += " loc(";
    for (size_t i = 0; i < n.loc.scopes.size(); ++i) out += (i ? ", " : "") + attr_str(Attr{n.loc.scopes[i]});
    out += ')';
  }
  if (n.body) {
    out += ' ';
    print_graph(*n.body, indent + "  ", options, out);
  } else {
    out += '\n';
  }
}

// `graph @name {...}` with every line after the first indented by `indent`.
static void print_graph(const Graph& g, const std::string& indent, PrintOptions options, std::string& out) {
  out += "graph @";
  out += g.name();
  out += " {\n";
  for (Value v : g.declarations()) {
    const ValueInfo& info = g.value(v);
    out += indent;
    out += "  ";
    out += value_kind_name(info.kind);
    out += " %";
    out += info.name;
    out += " : ";
    out += type_str(info.type);
    if (!info.attrs.empty()) {
      out += ' ';
      out += attrs_text(info.attrs);
    }
    out += '\n';
  }
  for (const Node& n : g.nodes()) print_node(g, n, indent, options, out);
  for (Value v : g.outputs()) {
    out += indent;
    out += "  output %";
    out += g.name_of(v);
    out += '\n';
  }
  out += indent;
  out += "}\n";
}

std::string print_kir(const Graph& g, PrintOptions options) {
  std::string out;
  print_graph(g, "", options, out);
  return out;
}

}  // namespace kiln
