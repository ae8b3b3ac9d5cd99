#include "tools/onnx_import/import_report.h"

namespace kiln::onnx {

std::string import_report(const ImportedModel& m) {
  const Graph& g = m.graph;
  std::string s;
  int64_t nodes = 0;
  for (const auto& [op, count] : m.onnx_ops) nodes += count;
  s += "graph @" + g.name() + ": " + std::to_string(nodes) + " ONNX nodes, " + std::to_string(m.folded_nodes) +
       " folded at import, " + std::to_string(g.nodes().size()) + " kiln nodes\n";
  for (Value v : g.declarations(ValueKind::input)) s += "  input %" + g.name_of(v) + " : " + type_str(g.type(v)) + "\n";
  for (Value v : g.outputs()) s += "  output %" + g.name_of(v) + " : " + type_str(g.type(v)) + "\n";
  for (ValueKind kind : {ValueKind::param, ValueKind::state}) {
    const std::vector<Value> decls = g.declarations(kind);
    int64_t values = 0;
    for (Value v : decls) values += g.type(v).numel();
    s += "  " + std::to_string(decls.size()) + " " + std::string(value_kind_name(kind)) + " (" +
         std::to_string(values) + " values)\n";
  }
  s += "  ONNX ops:";
  for (const auto& [op, count] : m.onnx_ops) s += " " + op + " " + std::to_string(count);
  return s + "\n";
}

}  // namespace kiln::onnx
