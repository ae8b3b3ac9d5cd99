#pragma once
// What the op converters of one ONNX graph share: the kiln graph being built,
// what each ONNX value name stands for (a kiln Value or an import-time Constant),
// the model's opset, and accessors that turn a node's inputs and attributes into
// kiln terms, with errors naming the node.
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "engine/ir/builder.h"
#include "tools/onnx_import/constant.h"

namespace onnx {
class NodeProto;
class AttributeProto;
class TensorProto;
}  // namespace onnx

namespace kiln::onnx {

// An ONNX value: made by the graph, or known at import time.
using Operand = std::variant<Value, Constant>;

// "node 'NAME' (OP)": how errors name a node; "node (OP) making 'OUTPUT'" if it
// has no name.
std::string node_label(const ::onnx::NodeProto& n);

// An error that already names its node (the importer names the node of any other).
struct NodeError : Error {
  using Error::Error;
};
// Throws NodeError "node 'NAME' (OP): MSG".
[[noreturn]] void fail(const ::onnx::NodeProto& n, const std::string& msg);

// An ONNX name as a kiln identifier ([A-Za-z0-9_.]+): other characters become
// '_', leading '_' are dropped ("/attn/Add_output_0" -> "attn_Add_output_0",
// "onnx::MatMul_12" -> "onnx__MatMul_12").
std::string kiln_name(const std::string& onnx_name);

class ImportContext {
 public:
  // How a constant becomes a graph value, given the ONNX name it has.
  using Materializer = std::function<Value(Builder&, const Constant&, const std::string& onnx_name)>;

  ImportContext(Graph& g, int64_t opset, Materializer materialize)
      : b_(g), opset_(opset), materialize_(std::move(materialize)) {}

  Builder& b() { return b_; }
  int64_t opset() const { return opset_; }

  void define(const std::string& onnx_name, Operand operand);
  // The operand an ONNX name stands for; throws kiln::Error if no node or input made it.
  const Operand& lookup(const std::string& onnx_name) const;
  // A graph value for an ONNX name: constants are materialized once.
  Value value_of(const std::string& onnx_name);
  // A graph value for a constant computed by a converter (`hint` names it).
  Value materialize(const Constant& c, const std::string& hint) { return materialize_(b_, c, hint); }

  // Node input i: whether it is given (optional inputs may be absent or "").
  bool has_input(const ::onnx::NodeProto& n, int i) const;
  bool is_constant(const ::onnx::NodeProto& n, int i) const;
  Value value(const ::onnx::NodeProto& n, int i);
  // An input the conversion needs to know at import time (a shape, axes, slice
  // bounds); an error names the node and input otherwise.
  const Constant& constant(const ::onnx::NodeProto& n, int i) const;
  // The same as a list of integers.
  std::vector<int64_t> constant_ints(const ::onnx::NodeProto& n, int i) const;
  TensorType type(const ::onnx::NodeProto& n, int i) const;

  // Attributes, checked for kind; `fallback` when absent.
  const ::onnx::AttributeProto* attr(const ::onnx::NodeProto& n, const std::string& name) const;
  int64_t attr_int(const ::onnx::NodeProto& n, const std::string& name, int64_t fallback) const;
  double attr_float(const ::onnx::NodeProto& n, const std::string& name, double fallback) const;
  std::vector<int64_t> attr_ints(const ::onnx::NodeProto& n, const std::string& name,
                                 std::vector<int64_t> fallback) const;
  // A tensor attribute; null when absent.
  const ::onnx::TensorProto* attr_tensor(const ::onnx::NodeProto& n, const std::string& name) const;
  // Integers from input i if given, else from attribute `name` (ops whose
  // attributes became inputs in later opsets: axes of Unsqueeze, ReduceSum, ...).
  std::vector<int64_t> ints_from_input_or_attr(const ::onnx::NodeProto& n, int i, const std::string& name,
                                               std::vector<int64_t> fallback) const;

 private:
  Builder b_;
  int64_t opset_;
  Materializer materialize_;
  std::map<std::string, Operand> operands_;
  std::map<std::string, Value> materialized_;
};

}  // namespace kiln::onnx
