#include "tools/onnx_import/converters.h"

#include "ops/constant.h"
#include "ops/shape_ops.h"
#include "tools/onnx_import/import.h"

namespace kiln::onnx {

namespace {

const std::map<std::string, OpConverter>& table() {
  static const std::map<std::string, OpConverter> rows = [] {
    std::map<std::string, OpConverter> m;
    for (const auto& family : {math_converters(), shape_converters()})
      for (const OpConverter& row : family) m.emplace(row.onnx_op, row);
    return m;
  }();
  return rows;
}

}  // namespace

Value reshape(ImportContext& c, Value x, const Shape& shape) {
  if (c.b().type(x).shape == shape) return x;
  return ops::reshape(c.b(), x, shape);
}

Value fill(Builder& b, const Shape& shape, const Constant& scalar, const std::string& what, const std::string& name) {
  scalar.to_tensor(what);  // checks that an integer fits in i32
  return ops::fill(b, shape, scalar.at(0), scalar.dtype, name);
}

int64_t dims_product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

const OpConverter* find_converter(const std::string& op_type) {
  const auto it = table().find(op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> importable_onnx_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, row] : table()) ops.push_back(name);
  return ops;
}

}  // namespace kiln::onnx
