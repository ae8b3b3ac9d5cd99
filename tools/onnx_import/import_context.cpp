#include "tools/onnx_import/import_context.h"

#include <onnx/onnx_pb.h>

namespace kiln::onnx {

std::string node_label(const ::onnx::NodeProto& n) {
  if (n.name().empty() && n.output_size() > 0)  // names are optional in ONNX: the node's first output names it
    return "node (" + n.op_type() + ") making '" + n.output(0) + "'";
  return "node '" + n.name() + "' (" + n.op_type() + ")";
}

void fail(const ::onnx::NodeProto& n, const std::string& msg) { throw NodeError(node_label(n) + ": " + msg); }

std::string kiln_name(const std::string& onnx_name) {
  std::string out;
  for (char c : onnx_name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    if (c == '_' || !ok) {
      if (!out.empty()) out += '_';
    } else {
      out += c;
    }
  }
  return out.empty() ? "v" : out;
}

void ImportContext::define(const std::string& onnx_name, Operand operand) {
  materialized_.erase(onnx_name);
  operands_.insert_or_assign(onnx_name, std::move(operand));
}

const Operand& ImportContext::lookup(const std::string& onnx_name) const {
  const auto it = operands_.find(onnx_name);
  if (it == operands_.end()) throw Error("value '" + onnx_name + "' is made by no node, input or initializer");
  return it->second;
}

Value ImportContext::value_of(const std::string& onnx_name) {
  const Operand& op = lookup(onnx_name);
  if (const Value* v = std::get_if<Value>(&op)) return *v;
  const auto it = materialized_.find(onnx_name);
  if (it != materialized_.end()) return it->second;
  const Value v = materialize_(b_, std::get<Constant>(op), onnx_name);
  materialized_.emplace(onnx_name, v);
  return v;
}

bool ImportContext::has_input(const ::onnx::NodeProto& n, int i) const {
  return i < n.input_size() && !n.input(i).empty();
}

bool ImportContext::is_constant(const ::onnx::NodeProto& n, int i) const {
  return has_input(n, i) && std::holds_alternative<Constant>(lookup(n.input(i)));
}

Value ImportContext::value(const ::onnx::NodeProto& n, int i) {
  if (!has_input(n, i)) fail(n, "input " + std::to_string(i) + " is missing");
  try {
    return value_of(n.input(i));
  } catch (const Error& e) {
    fail(n, "input " + std::to_string(i) + ": " + e.what());
  }
}

const Constant& ImportContext::constant(const ::onnx::NodeProto& n, int i) const {
  if (!has_input(n, i)) fail(n, "input " + std::to_string(i) + " is missing");
  const Operand& op = lookup(n.input(i));
  if (const Constant* c = std::get_if<Constant>(&op)) return *c;
  fail(n, "input " + std::to_string(i) + " ('" + n.input(i) +
              "') must be known at import time (a constant, an initializer or computed from shapes), "
              "but it depends on the graph's inputs or params");
}

std::vector<int64_t> ImportContext::constant_ints(const ::onnx::NodeProto& n, int i) const {
  const Constant& c = constant(n, i);
  if (c.dtype != DType::i32) fail(n, "input " + std::to_string(i) + " must hold integers");
  return c.ints;
}

TensorType ImportContext::type(const ::onnx::NodeProto& n, int i) const {
  if (!has_input(n, i)) fail(n, "input " + std::to_string(i) + " is missing");
  const Operand& op = lookup(n.input(i));
  if (const Constant* c = std::get_if<Constant>(&op)) return c->type();
  return b_.type(std::get<Value>(op));
}

const ::onnx::AttributeProto* ImportContext::attr(const ::onnx::NodeProto& n, const std::string& name) const {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

namespace {

void expect_kind(const ::onnx::NodeProto& n, const ::onnx::AttributeProto& a, ::onnx::AttributeProto::AttributeType t) {
  if (a.type() != t)
    fail(n, "attribute " + a.name() + " is " + ::onnx::AttributeProto::AttributeType_Name(a.type()) + ", expected " +
                ::onnx::AttributeProto::AttributeType_Name(t));
}

}  // namespace

int64_t ImportContext::attr_int(const ::onnx::NodeProto& n, const std::string& name, int64_t fallback) const {
  const auto* a = attr(n, name);
  if (!a) return fallback;
  expect_kind(n, *a, ::onnx::AttributeProto::INT);
  return a->i();
}

double ImportContext::attr_float(const ::onnx::NodeProto& n, const std::string& name, double fallback) const {
  const auto* a = attr(n, name);
  if (!a) return fallback;
  expect_kind(n, *a, ::onnx::AttributeProto::FLOAT);
  return a->f();
}

std::vector<int64_t> ImportContext::attr_ints(const ::onnx::NodeProto& n, const std::string& name,
                                              std::vector<int64_t> fallback) const {
  const auto* a = attr(n, name);
  if (!a) return fallback;
  expect_kind(n, *a, ::onnx::AttributeProto::INTS);
  return {a->ints().begin(), a->ints().end()};
}

const ::onnx::TensorProto* ImportContext::attr_tensor(const ::onnx::NodeProto& n, const std::string& name) const {
  const auto* a = attr(n, name);
  if (!a) return nullptr;
  expect_kind(n, *a, ::onnx::AttributeProto::TENSOR);
  return &a->t();
}

std::vector<int64_t> ImportContext::ints_from_input_or_attr(const ::onnx::NodeProto& n, int i,
                                                            const std::string& name,
                                                            std::vector<int64_t> fallback) const {
  if (has_input(n, i)) return constant_ints(n, i);
  return attr_ints(n, name, std::move(fallback));
}

}  // namespace kiln::onnx
