#include "engine/onnx/model_reader.h"

#include <onnx/checker.h>

#include <map>
#include <vector>

#include "engine/ir/error.h"
#include "engine/onnx/converters.h"
#include "engine/onnx/import_context.h"

namespace kiln::onnx {

namespace {

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

}  // namespace

::onnx::ModelProto parse_model(const std::string& bytes) {
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw Error("not an ONNX model: protobuf cannot parse it (a truncated file, or not ONNX at all)");
  // Protobuf accepts many byte strings (a prefix cut at a field boundary, text
  // whose bytes happen to be valid fields), so a model must have what every
  // ONNX writer writes.
  if (model.ir_version() <= 0 || model.opset_import_size() == 0 || !model.has_graph())
    throw Error("not an ONNX model: it lacks an IR version, an opset import or a graph");
  if (model.graph().output_size() == 0) throw Error("not an ONNX model: its graph has no outputs (truncated?)");
  return model;
}

int64_t default_opset(const ::onnx::ModelProto& model) {
  for (const auto& o : model.opset_import())
    if (is_default_domain(o.domain())) return o.version();
  throw Error("the model imports no version of the default ONNX domain");
}

void check_ops_supported(const ::onnx::GraphProto& graph) {
  std::map<std::string, std::vector<std::string>> missing;  // op -> node names
  for (const auto& n : graph.node()) {
    const std::string op = is_default_domain(n.domain()) ? n.op_type() : n.domain() + "." + n.op_type();
    if (!is_default_domain(n.domain()) || !find_converter(n.op_type())) missing[op].push_back("'" + n.name() + "'");
  }
  if (missing.empty()) return;
  std::string msg = std::to_string(missing.size()) + " ONNX op" + (missing.size() > 1 ? "s" : "") +
                    " that kiln cannot import:";
  for (const auto& [op, nodes] : missing) {
    msg += "\n  " + op + ": node" + (nodes.size() > 1 ? "s " : " ");
    for (size_t i = 0; i < nodes.size(); ++i) msg += (i ? ", " : "") + nodes[i];
  }
  throw Error(msg);
}

void check_model(const ::onnx::ModelProto& model) {
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(std::string("invalid ONNX model: ") + e.what());
  }
}

}  // namespace kiln::onnx
