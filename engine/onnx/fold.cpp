#include "engine/onnx/fold.h"

#include <onnx/onnx_pb.h>

#include "engine/interpreter.h"

namespace kiln::onnx {

std::vector<Constant> fold_node(const ConvertFn& convert, const ::onnx::NodeProto& n,
                                const std::map<std::string, Constant>& inputs, int64_t opset) {
  Graph scratch("fold");
  std::map<std::string, Tensor> bindings;
  ImportContext c(scratch, opset, [&](Builder& b, const Constant& k, const std::string& onnx_name) {
    const std::string name = b.graph().fresh_name(kiln_name(onnx_name));
    bindings.emplace(name, k.to_tensor(node_label(n) + ": input '" + onnx_name + "'"));
    return b.input(name, k.type());
  });
  for (const auto& [name, k] : inputs) c.define(name, k);
  const std::vector<Operand> results = convert(c, n);
  std::vector<std::string> names;  // of each Value result, in order
  for (const Operand& r : results) {
    if (const Value* v = std::get_if<Value>(&r)) {
      c.b().output(*v);
      names.push_back(scratch.name_of(*v));
    }
  }
  Interpreter interp(std::move(scratch));
  for (auto& [name, t] : bindings) interp.bind(name, std::move(t));
  interp.run();

  std::vector<Constant> out;
  size_t next = 0;
  for (const Operand& r : results) {
    if (const Constant* k = std::get_if<Constant>(&r)) {
      out.push_back(*k);
      continue;
    }
    const std::string& name = names[next++];
    out.push_back(Constant::from_tensor(interp.is_bound(name) ? interp.binding(name) : interp.output(name)));
  }
  return out;
}

}  // namespace kiln::onnx
