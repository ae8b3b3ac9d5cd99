#include "compiler/passes/constants.h"

#include <cstring>

#include "engine/ir/op_def.h"
#include "ops/op_helpers.h"

namespace kiln::compiler {

std::optional<double> splat_value(const Graph& g, Value v) {
  const ValueInfo& info = g.value(v);
  if (info.kind != ValueKind::result || g.producer(v).op() != "fill") return std::nullopt;
  const double value = g.producer(v).attrs.get_float("value");
  return ops::dispatch_dtype(info.type.dtype,
                             [&](auto tag) { return static_cast<double>(ops::convert_element<decltype(tag)>(value)); });
}

bool is_constant(const Graph& g, Value v) { return g.value(v).kind == ValueKind::result && g.producer(v).def->constant; }

Tensor constant_tensor(const Graph& g, Value v) {
  const Node& n = g.producer(v);
  Tensor t = Tensor::zeros(g.type(v));
  std::vector<const Tensor*> in;
  std::vector<Tensor*> out = {&t};
  n.def->reference(KernelArgs{in, out, n.attrs});
  return t;
}

Tensor splat_tensor(const TensorType& type, double value) {
  Tensor t = Tensor::zeros(type);
  ops::dispatch_dtype(type.dtype, [&](auto tag) {
    using T = decltype(tag);
    t.as<T>().fill(ops::convert_element<T>(value));
  });
  return t;
}

std::optional<double> common_value(const Tensor& t) {
  if (t.numel() == 0) return std::nullopt;
  const size_t size = dtype_size(t.dtype());
  const auto* bytes = static_cast<const unsigned char*>(t.data());
  for (int64_t i = 1; i < t.numel(); ++i)
    if (std::memcmp(bytes, bytes + static_cast<size_t>(i) * size, size) != 0) return std::nullopt;
  return ops::dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return static_cast<double>(*static_cast<const T*>(t.data()));
  });
}

}  // namespace kiln::compiler
