#include "compiler/aot/aot_interface.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <string_view>

#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

namespace {

// C11 keywords and the C++ ones a header included from C++ must avoid too.
constexpr std::string_view kKeywords[] = {
    "alignas",  "alignof",  "auto",      "bool",   "break",    "case",    "catch",    "char",     "class",
    "const",    "continue", "default",   "delete", "do",       "double",  "else",     "enum",     "explicit",
    "extern",   "false",    "float",     "for",    "friend",   "goto",    "if",       "inline",   "int",
    "long",     "mutable",  "namespace", "new",    "noexcept", "nullptr", "operator", "private",  "protected",
    "public",   "register", "restrict",  "return", "short",    "signed",  "sizeof",   "static",   "struct",
    "switch",   "template", "this",      "throw",  "true",     "try",     "typedef",  "typename", "union",
    "unsigned", "using",    "virtual",   "void",   "volatile", "while",   "_Bool"};

bool is_keyword(std::string_view s) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), s) != std::end(kKeywords);
}

std::string describe(const AotField& f) {
  static constexpr std::string_view roles[] = {"input", "param", "state", "output", "assign to"};
  return std::string(roles[static_cast<size_t>(f.role)]) + " %" + f.graph_name;
}

AotField::Role role_of(ValueKind kind) {
  switch (kind) {
    case ValueKind::input:
      return AotField::Role::input;
    case ValueKind::param:
      return AotField::Role::param;
    case ValueKind::state:
      return AotField::Role::state;
    case ValueKind::result:
      break;
  }
  throw Error("aot: a node result is not a declaration");
}

}  // namespace

std::string c_identifier(const std::string& name) {
  std::string id = name;
  std::replace(id.begin(), id.end(), '.', '_');
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0]))) id = "v" + id;
  if (is_keyword(id)) id += '_';
  return id;
}

std::string c_macro_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string default_aot_prefix(const Graph& g) { return c_identifier(g.name()); }

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || is_keyword(s)) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

AotInterface aot_interface(const Graph& g, const Program& p, const std::string& prefix) {
  if (!is_c_identifier(prefix)) throw Error("aot: the entry prefix '" + prefix + "' is not a C identifier");
  AotInterface api;
  api.prefix = prefix;
  for (Value v : g.declarations())
    api.fields.push_back({c_identifier(g.name_of(v)), g.name_of(v), role_of(g.value(v).kind), v});
  std::vector<Value> shown;  // outputs once each, even if listed twice
  for (Value v : g.outputs()) {
    if (std::find(shown.begin(), shown.end(), v) != shown.end()) continue;
    shown.push_back(v);
    const std::string prefix_if_declared = g.value(v).kind == ValueKind::result ? "" : "out_";
    api.fields.push_back({prefix_if_declared + c_identifier(g.name_of(v)), g.name_of(v), AotField::Role::output, v});
  }
  for (const Node& node : g.nodes())
    if (node.def->side_effect)
      api.fields.push_back({"new_" + c_identifier(g.name_of(node.operands[0])), g.name_of(node.operands[0]),
                            AotField::Role::assigned, node.operands[1]});

  std::map<std::string, size_t> by_upper_name;
  for (size_t i = 0; i < api.fields.size(); ++i) {
    const auto [it, fresh] = by_upper_name.emplace(c_macro_case(api.fields[i].name), i);
    if (!fresh)
      throw Error("aot: " + describe(api.fields[it->second]) + " and " + describe(api.fields[i]) +
                  " would both be field '" + api.fields[i].name + "' of struct " + prefix +
                  "_args; rename one in the graph");
  }

  std::vector<std::optional<size_t>> home(g.num_values());  // the field holding each value's buffer
  for (size_t i = 0; i < api.fields.size(); ++i) {
    const Value v = api.fields[i].value;
    std::optional<size_t>& h = home[static_cast<size_t>(v.id)];
    if (!h)
      h = i;
    else
      api.copies.push_back({i, v});
  }
  api.buffers.resize(g.num_values());
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    const auto id = static_cast<size_t>(p.buffers[b].value.id);
    if (home[id]) {
      api.buffers[id] = {AotBuffer::Place::field, *home[id], 0};
    } else if (p.buffers[b].kind == BufferKind::temp) {
      api.buffers[id] = {AotBuffer::Place::workspace, 0, static_cast<uint64_t>(p.plan.offsets[b])};
    } else {
      throw Error("aot: %" + p.buffers[b].name + " is an output with no field");
    }
  }
  api.workspace_bytes = static_cast<uint64_t>(p.plan.arena_bytes);
  return api;
}

}  // namespace kiln::compiler
