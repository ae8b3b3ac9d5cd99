#include "tools/onnx_import/fold.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "engine/interpreter.h"

namespace kiln::onnx {

namespace {

// ONNX's integers are int64, kiln's i32 (which wraps around): integer arithmetic
// is folded only when its result provably fits in i32, judged from the largest
// magnitude of each operand, so no shape or index computed at import wraps.
void check_fits_i32(const ::onnx::NodeProto& n, const ImportContext& source) {
  if (!source.has_input(n, 0) || source.constant(n, 0).dtype != DType::i32) return;
  auto magnitude = [&](int i) {  // exact: |INT64_MIN| fits in uint64_t
    uint64_t m = 0;
    if (source.has_input(n, i))
      for (int64_t v : source.constant(n, i).ints)
        m = std::max(m, v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
    return m;
  };
  const std::string& op = n.op_type();
  const bool binary = op == "Add" || op == "Sub" || op == "Mul" || op == "Div";
  const auto m0 = static_cast<double>(magnitude(0)), m1 = binary ? static_cast<double>(magnitude(1)) : 0.0;
  double bound = 0;  // of the result's magnitude
  if (op == "Add" || op == "Sub")
    bound = m0 + m1;
  else if (op == "Mul")
    bound = m0 * m1;
  else if (op == "Neg" || op == "Div")
    bound = m0;
  else if (op == "ReduceSum" || op == "ReduceMean")
    bound = m0 * static_cast<double>(source.constant(n, 0).numel());
  if (bound <= std::numeric_limits<int32_t>::max()) return;
  std::string operands = std::to_string(magnitude(0));
  if (binary) operands += " and " + std::to_string(magnitude(1));
  fail(n, "its integer result may not fit in kiln's i32 (ONNX computes it in int64): operands up to " + operands);
}

}  // namespace

std::optional<std::vector<Constant>> fold_node(const ConvertFn& convert, const ::onnx::NodeProto& n,
                                               const ImportContext& source) {
  // Counts elements up to the limit (a sum of huge counts could overflow).
  int64_t elements = 0;
  auto within_limit = [&](int64_t more) { return more <= kMaxFoldElements - elements && (elements += more, true); };
  for (int i = 0; i < n.input_size(); ++i)
    if (source.has_input(n, i) && !within_limit(source.constant(n, i).numel())) return std::nullopt;
  check_fits_i32(n, source);

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
