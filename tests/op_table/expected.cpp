#include "expected.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::test {

Shape broadcast_shape(const std::vector<Tensor>& operands) {
  Shape out;
  for (const Tensor& x : operands) {
    const Shape s = x.shape();
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    for (size_t k = 0; k < s.size(); ++k) {
      int64_t& d = out[out.size() - s.size() + k];
      if (d == 1) d = s[k];
    }
  }
  return out;
}

std::vector<size_t> broadcast_index(const Shape& operand, const Shape& result) {
  std::vector<size_t> index(static_cast<size_t>(numel(result)));
  const size_t lead = result.size() - operand.size();
  for (size_t i = 0; i < index.size(); ++i) {
    size_t rest = i, flat = 0, stride = 1;
    for (size_t k = result.size(); k-- > 0;) {
      const auto dim = static_cast<size_t>(result[k]);
      const size_t coord = rest % dim;
      rest /= dim;
      if (k < lead) continue;
      const auto od = static_cast<size_t>(operand[k - lead]);
      flat += (od == 1 ? 0 : coord) * stride;
      stride *= od;
    }
    index[i] = flat;
  }
  return index;
}

std::vector<Tensor> expected_select(const Sample& s) {
  const Shape shape = broadcast_shape(s.operands);
  const std::vector<size_t> c = broadcast_index(s.operands[0].shape(), shape);
  const std::vector<size_t> x = broadcast_index(s.operands[1].shape(), shape);
  const std::vector<size_t> y = broadcast_index(s.operands[2].shape(), shape);
  return {s.operands[1].visit([&](const auto& first) {
    using T = typename std::decay_t<decltype(first)>::value_type;
    xt::xarray<T> out = xt::xarray<T>::from_shape(xt_shape(shape));
    for (size_t i = 0; i < out.size(); ++i)
      out.data()[i] = s.operands[0].b8().data()[c[i]] ? first.data()[x[i]] : s.operands[2].as<T>().data()[y[i]];
    return Tensor(std::move(out));
  })};
}

std::vector<Tensor> expected_cast(const Sample& s) {
  const Tensor& x = s.operands[0];
  Tensor out = Tensor::zeros({s.attrs.get_dtype("dtype"), x.shape()});
  for (size_t i = 0; i < static_cast<size_t>(x.numel()); ++i) {
    const double v = x.visit([&](const auto& a) { return static_cast<double>(a.data()[i]); });
    switch (out.dtype()) {
      case DType::f32:
        out.f32().data()[i] = static_cast<float>(v);
        break;
      case DType::i32: {
        constexpr double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
        out.i32().data()[i] = std::isnan(v) ? 0 : static_cast<int32_t>(std::trunc(std::clamp(v, lo, hi)));
        break;
      }
      case DType::boolean:
        out.b8().data()[i] = v != 0;  // nan != 0 too
        break;
      case DType::bf16:
        out.bf16().data()[i] = bfloat16(static_cast<float>(v));  // via f32
        break;
    }
  }
  return {out};
}

}  // namespace kiln::test
