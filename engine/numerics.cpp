#include "engine/numerics.h"

#include <cmath>

#include "engine/ir/error.h"

namespace kiln {

std::string first_nonfinite(const float* data, const Shape& shape) {
  const int64_t n = numel(shape);
  for (int64_t i = 0; i < n; ++i) {
    const float x = data[i];
    if (!std::isnan(x) && !(std::isinf(x) && x > 0)) continue;
    std::vector<int64_t> index(shape.size());
    for (size_t d = shape.size(), rest = static_cast<size_t>(i); d-- > 0;) {
      index[d] = static_cast<int64_t>(rest % static_cast<size_t>(shape[d]));
      rest /= static_cast<size_t>(shape[d]);
    }
    std::string at;
    for (int64_t k : index) at += (at.empty() ? "" : ", ") + std::to_string(k);
    return std::string(std::isnan(x) ? "nan" : "inf") + " at [" + at + "]";
  }
  return "";
}

std::string first_nonfinite(const Tensor& t) {
  return t.dtype() == DType::f32 ? first_nonfinite(t.f32().data(), t.shape()) : "";
}

void throw_nonfinite(const Graph& source, const std::string& value, const TensorType& type, const std::string& found,
                     const std::string& maker) {
  std::string msg = "check-numerics: %" + value + " (" + type_str(type) + ") holds " + found +
                    ", the run's first nan or inf; made by " + maker;
  if (const auto v = source.find(value); v && source.value(*v).kind == ValueKind::result) {
    const Node& node = source.producer(*v);
    msg += " by op '" + node.op() + "'";
    if (const std::string origin = origin_phrase(node.loc); !origin.empty()) msg += " " + origin;
  }
  throw Error(msg);
}

void check_declarations(const Graph& g, const std::map<std::string, Tensor>& bound) {
  for (Value v : g.declarations()) {
    const std::string& name = g.name_of(v);
    const std::string found = first_nonfinite(bound.at(name));
    if (!found.empty())
      throw Error("check-numerics: " + std::string(value_kind_name(g.value(v).kind)) + " %" + name + " (" +
                  type_str(g.type(v)) + ") holds " + found + " before the run");
  }
}

}  // namespace kiln
