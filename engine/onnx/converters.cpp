#include "engine/onnx/converters.h"

#include "engine/onnx/import.h"

namespace kiln::onnx {

namespace {

const std::map<std::string, ConvertFn>& table() {
  static const std::map<std::string, ConvertFn> rows = [] {
    std::map<std::string, ConvertFn> m;
    for (const auto& family : {math_converters(), shape_converters()})
      for (const OpConverter& row : family) m.emplace(row.onnx_op, row.convert);
    return m;
  }();
  return rows;
}

}  // namespace

Value reshape(ImportContext& c, Value x, const Shape& shape) {
  if (c.b().type(x).shape == shape) return x;
  return c.b().emit1("reshape", {x}, {{"shape", shape}});
}

int64_t dims_product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

const ConvertFn* find_converter(const std::string& op_type) {
  const auto it = table().find(op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> importable_onnx_ops() {
  std::vector<std::string> ops;
  for (const auto& [name, fn] : table()) ops.push_back(name);
  return ops;
}

}  // namespace kiln::onnx
