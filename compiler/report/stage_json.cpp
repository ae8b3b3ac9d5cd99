#include "compiler/report/stage_json.h"

#include <algorithm>

#include "compiler/report/node_origin.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"

namespace kiln::compiler {

size_t TextTable::intern(const std::string& text) {
  const auto [it, added] = index_.emplace(text, texts_.size());
  if (added) texts_.push_back(text);
  return it->second;
}

namespace {

// The top-level statements of print_kir's text, in order: each starts on a line
// indented by two spaces; a fusion's body and its closing brace continue it.
std::vector<std::string> statements(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = text.find('\n');  // past "graph @NAME {"
  while (pos != std::string::npos && pos + 1 < text.size()) {
    const size_t start = pos + 1;
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    pos = end;
    if (line.size() < 3 || line.compare(0, 2, "  ") != 0) continue;  // the graph's closing brace
    const bool continues = line[2] == ' ' || line[2] == '}';
    if (continues && !out.empty())
      out.back().append("\n").append(line, 2);
    else
      out.push_back(line.substr(2));
  }
  return out;
}

// "n3", "n3.1": a node's REF, or a fusion body node's. (Built by appending:
// GCC 12 misreads "n" + std::to_string(...) as an overflow.)
std::string node_ref(size_t node, int body_node = -1) {
  std::string ref(1, 'n');
  ref += std::to_string(node);
  if (body_node >= 0) ref.append(1, '.').append(std::to_string(body_node));
  return ref;
}

// What makes each value of a graph, as a REF.
class Sources {
 public:
  explicit Sources(const Graph& g) : g_(g) {}

  std::string ref(Value v) const {
    const ValueInfo& info = g_.value(v);
    if (info.kind != ValueKind::result) return "d:" + info.name;
    const auto node = static_cast<size_t>(info.node);
    const Node& n = g_.nodes()[node];
    if (!n.body) return node_ref(node);
    // A fusion's result: the body node that makes the body's matching output.
    const size_t k = static_cast<size_t>(std::find(n.results.begin(), n.results.end(), v) - n.results.begin());
    const Graph& body = *n.body;
    const ValueInfo& inner = body.value(body.outputs()[k]);
    if (inner.kind == ValueKind::result) return node_ref(node, inner.node);
    const std::vector<Value>& inputs = body.declarations();  // passed straight through
    const auto m = static_cast<size_t>(std::find(inputs.begin(), inputs.end(), body.outputs()[k]) - inputs.begin());
    return ref(n.operands[m]);
  }

 private:
  const Graph& g_;
};

nlohmann::json outs_json(const Graph& g, const Node& n) {
  nlohmann::json outs = nlohmann::json::array();
  for (Value r : n.results) outs.push_back({g.name_of(r), type_str(g.type(r))});
  return outs;
}

void add_scopes(nlohmann::json& out, const Node& n) {
  if (!scopes_of(n).empty()) out["scopes"] = scopes_of(n);
}

// A fusion's body nodes; their operands that are body inputs refer to the
// fusion's operands.
nlohmann::json body_json(const Graph& g, const Sources& sources, const Node& fusion, size_t index) {
  const Graph& body = *fusion.body;
  const std::vector<Value>& inputs = body.declarations();
  nlohmann::json out = nlohmann::json::array();
  for (const Node& n : body.nodes()) {
    nlohmann::json ins = nlohmann::json::array();
    for (Value v : n.operands) {
      const ValueInfo& info = body.value(v);
      if (info.kind == ValueKind::result) {
        ins.push_back({node_ref(index, info.node), info.name});
      } else {
        const auto m = static_cast<size_t>(std::find(inputs.begin(), inputs.end(), v) - inputs.begin());
        ins.push_back({sources.ref(fusion.operands[m]), g.name_of(fusion.operands[m])});
      }
    }
    nlohmann::json node = {{"op", n.op()}, {"outs", outs_json(body, n)}, {"ins", ins}};
    add_scopes(node, n);
    out.push_back(std::move(node));
  }
  return out;
}

}  // namespace

nlohmann::json stage_json(const std::string& text, const std::string& file, TextTable& texts) {
  Graph g;
  try {
    g = parse_kir(text, file);
  } catch (const Error& e) {
    throw Error("--dump-dir: " + file + " does not parse: " + e.what());
  }
  const std::vector<std::string> lines = statements(text);
  const std::vector<Value>& decl_values = g.declarations();
  if (lines.size() != decl_values.size() + g.nodes().size() + g.outputs().size())
    throw Error("--dump-dir: " + file + " is not in print_kir's form");
  const Sources sources(g);
  nlohmann::json decls = nlohmann::json::array();
  for (size_t i = 0; i < decl_values.size(); ++i) {
    const ValueInfo& info = g.value(decl_values[i]);
    decls.push_back({{"name", info.name},
                     {"kind", std::string(value_kind_name(info.kind))},
                     {"type", type_str(info.type)},
                     {"text", texts.intern(lines[i])}});
  }
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    nlohmann::json ins = nlohmann::json::array();
    for (Value v : n.operands) ins.push_back({sources.ref(v), g.name_of(v)});
    nlohmann::json node = {{"op", n.op()},
                           {"outs", outs_json(g, n)},
                           {"ins", ins},
                           {"text", texts.intern(lines[decl_values.size() + i])}};
    add_scopes(node, n);
    if (n.body) {
      node["kind"] = n.attrs.get_string("kind");
      node["body"] = body_json(g, sources, n, i);
    }
    nodes.push_back(std::move(node));
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (Value v : g.outputs()) outputs.push_back({sources.ref(v), g.name_of(v)});
  return {{"decls", decls}, {"nodes", nodes}, {"outputs", outputs}};
}

}  // namespace kiln::compiler
