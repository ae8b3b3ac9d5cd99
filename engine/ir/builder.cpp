#include "engine/ir/builder.h"

#include "engine/ir/error.h"

namespace kiln {

std::string op_signature(const std::string& op, const std::vector<TensorType>& operand_types) {
  std::string s = op + "(";
  for (size_t i = 0; i < operand_types.size(); ++i) {
    if (i) s += ", ";
    s += type_str(operand_types[i]);
  }
  return s + ")";
}

std::vector<TensorType> infer_result_types(const OpDef& def, const std::vector<TensorType>& operand_types,
                                           const Attrs& attrs) {
  const int n = static_cast<int>(operand_types.size());
  if (n < def.min_operands || (def.max_operands >= 0 && n > def.max_operands)) {
    std::string want = def.max_operands < 0 ? "at least " + std::to_string(def.min_operands)
                       : def.min_operands == def.max_operands
                           ? std::to_string(def.min_operands)
                           : std::to_string(def.min_operands) + " to " + std::to_string(def.max_operands);
    throw Error(op_signature(def.name, operand_types) + ": expects " + want + " operand(s), got " +
                std::to_string(n));
  }
  try {
    return def.infer(operand_types, attrs);
  } catch (const Error& e) {
    throw Error(op_signature(def.name, operand_types) + ": " + e.what());
  }
}

std::vector<Value> Builder::emit(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                                 const std::vector<std::string>& names) {
  const OpDef* def = OpRegistry::global().find(op);
  if (!def) throw Error("unknown op '" + op + "'");
  std::vector<TensorType> operand_types;
  for (Value v : operands) {
    if (!v.valid() || static_cast<size_t>(v.id) >= g_.num_values())
      throw Error(op + ": operand is not a value of graph @" + g_.name());
    operand_types.push_back(g_.type(v));
  }
  Attrs full;
  try {
    full = complete_attrs(*def, attrs);
  } catch (const Error& e) {
    throw Error(op_signature(op, operand_types) + ": " + e.what());
  }
  const std::vector<TensorType> result_types = infer_result_types(*def, operand_types, full);
  std::vector<std::string> result_names;
  for (size_t i = 0; i < result_types.size(); ++i)
    result_names.push_back(i < names.size() && !names[i].empty() ? g_.fresh_name(names[i]) : std::string());
  const int32_t id = g_.add_node(def, operands, std::move(full), result_types, result_names);
  return g_.nodes()[static_cast<size_t>(id)].results;
}

Value Builder::emit1(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                     const std::string& name) {
  std::vector<Value> r = emit(op, operands, attrs, {name});
  if (r.size() != 1) throw Error(op + ": expected one result, op has " + std::to_string(r.size()));
  return r[0];
}

}  // namespace kiln
