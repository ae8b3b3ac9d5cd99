#include "op_graph.h"

#include <memory>

#include "engine/ir/builder.h"

namespace kiln::test {

std::vector<Value> emit_op(Builder& b, const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                           const std::shared_ptr<const Graph>& body) {
  return body ? b.emit_fusion(body, operands, attrs) : b.emit(op, operands, attrs);
}

std::string operand_name(size_t i) { return std::string("x").append(std::to_string(i)); }

Graph sample_graph(const OpInfo& row, const Sample& s, const Wrap& wrap) {
  if (row.build) return row.build(s, wrap);
  Graph g(row.name);
  Builder b(g);
  std::vector<Value> operands;
  for (size_t i = 0; i < s.operands.size(); ++i) operands.push_back(wrap(b, b.input(operand_name(i), s.operands[i].type())));
  for (Value r : emit_op(b, row.name, operands, s.attrs, s.body)) b.output(wrap(b, r));
  return g;
}

Value no_wrap(Builder&, Value v) { return v; }

Wrap unit_wrap() {
  auto ones = std::make_shared<std::map<DType, Value>>();
  return [ones](Builder& b, Value v) {
    const DType t = b.type(v).dtype;
    // bf16 has no arithmetic: through f32 and back (exact), casts to fuse.
    const DType math = t == DType::bf16 ? DType::f32 : t;
    auto it = ones->find(math);
    if (it == ones->end())
      it = ones->emplace(math, b.input(std::string("one_").append(dtype_name(math)), {math, {}})).first;
    if (t == DType::bf16) v = b.emit1("cast", {v}, {{"dtype", DType::f32}});
    const Value w = b.emit1(t == DType::boolean ? "logical_and" : "mul", {v, it->second});
    return t == DType::bf16 ? b.emit1("cast", {w}, {{"dtype", DType::bf16}}) : w;
  };
}

std::map<std::string, Tensor> sample_bindings(const Graph& g, const Sample& s) {
  std::map<std::string, Tensor> bindings;
  for (size_t i = 0; i < s.operands.size(); ++i) bindings.emplace(operand_name(i), s.operands[i]);
  for (Value v : g.declarations()) {
    const std::string& name = g.name_of(v);
    if (bindings.count(name)) continue;
    Tensor one = Tensor::zeros(g.type(v));
    one.visit([](auto& a) { a.fill(typename std::decay_t<decltype(a)>::value_type(1)); });
    bindings.emplace(name, std::move(one));
  }
  return bindings;
}

}  // namespace kiln::test
