#include "engine/onnx/fold.h"

#include <onnx/onnx_pb.h>

#include "engine/interpreter.h"

namespace kiln::onnx {

std::optional<std::vector<Constant>> fold_node(const ConvertFn& convert, const ::onnx::NodeProto& n,
                                               const ImportContext& source) {
  // Counts elements up to the limit (a sum of huge counts could overflow).
  int64_t elements = 0;
  auto within_limit = [&](int64_t more) { return more <= kMaxFoldElements - elements && (elements += more, true); };
  for (int i = 0; i < n.input_size(); ++i)
    if (source.has_input(n, i) && !within_limit(source.constant(n, i).numel())) return std::nullopt;

  Graph scratch("fold");
  std::map<std::string, Tensor> bindings;
  ImportContext c(scratch, source.opset(), [&](Builder& b, const Constant& k, const std::string& onnx_name) {
    const std::string name = b.graph().fresh_name(kiln_name(onnx_name));
    bindings.emplace(name, k.to_tensor(node_label(n) + ": input '" + onnx_name + "'"));
    return b.input(name, k.type());
  });
  for (int i = 0; i < n.input_size(); ++i)
    if (source.has_input(n, i)) c.define(n.input(i), source.constant(n, i));
  std::vector<Operand> results = convert(c, n);
  std::vector<std::string> names;  // of each Value result, in order
  elements = 0;
  for (const Operand& r : results) {
    if (const Value* v = std::get_if<Value>(&r)) {
      if (!within_limit(scratch.type(*v).numel())) return std::nullopt;
      c.b().output(*v);
      names.push_back(scratch.name_of(*v));
    }
  }
  Interpreter interp(std::move(scratch));
  for (auto& [name, t] : bindings) interp.bind(name, std::move(t));
  interp.run();

  std::vector<Constant> out;
  size_t next = 0;
  for (Operand& r : results) {
    if (Constant* k = std::get_if<Constant>(&r)) {
      out.push_back(std::move(*k));
      continue;
    }
    const std::string& name = names[next++];
    out.push_back(Constant::from_tensor(interp.is_bound(name) ? interp.binding(name) : interp.output(name)));
  }
  return out;
}

}  // namespace kiln::onnx
