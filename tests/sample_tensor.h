#pragma once
// A tensor of any dtype and shape with known, distinct elements, for the file
// formats' round trips (tests/engine: .npy, safetensors).
#include <xtensor/xbuilder.hpp>

#include "engine/tensor/tensor.h"

namespace kiln::test {

// Elements i = 0, 1, ...: f32 0.5i - 1, i32 7i - 5, bool i % 3 == 0, bf16 0.25i - 3.
inline Tensor sample_tensor(DType dtype, const Shape& shape) {
  const auto ramp = xt::arange<int32_t>(static_cast<int32_t>(numel(shape)));
  auto shaped = [&](auto a) {
    a.reshape(xt_shape(shape));
    return Tensor(std::move(a));
  };
  switch (dtype) {
    case DType::f32: return shaped(Tensor::F32(xt::cast<float>(ramp) * 0.5f - 1.0f));
    case DType::i32: return shaped(Tensor::I32(ramp * 7 - 5));
    case DType::boolean: return shaped(Tensor::Bool(xt::equal(ramp % 3, 0)));
    case DType::bf16: {
      Tensor::BF16 a = Tensor::BF16::from_shape({ramp.size()});
      for (size_t i = 0; i < a.size(); ++i) a(i) = bfloat16(0.25f * static_cast<float>(ramp(i)) - 3.0f);
      return shaped(std::move(a));
    }
  }
  return {};
}

}  // namespace kiln::test
