#include "engine/tensor/tensor.h"

#include "engine/ir/error.h"
#include "engine/tensor/memory_check.h"

namespace kiln {

std::vector<std::size_t> xt_shape(const Shape& s) { return {s.begin(), s.end()}; }
Shape ir_shape(const xt::svector<std::size_t, 4>& s) { return {s.begin(), s.end()}; }
Shape ir_shape(const std::vector<std::size_t>& s) { return {s.begin(), s.end()}; }

Tensor Tensor::zeros(const TensorType& t) {
  checked_bytes(t);
  const auto shape = xt_shape(t.shape);
  switch (t.dtype) {
    case DType::f32: return Tensor(F32(xt::zeros<float>(shape)));
    case DType::i32: return Tensor(I32(xt::zeros<int32_t>(shape)));
    case DType::boolean: return Tensor(Bool(xt::zeros<bool>(shape)));
    case DType::bf16: {
      BF16 a = BF16::from_shape(shape);
      a.fill(bfloat16());  // +0
      return Tensor(std::move(a));
    }
  }
  throw Error("zeros: bad dtype");
}

Shape Tensor::shape() const {
  return visit([](const auto& a) { return Shape(a.shape().begin(), a.shape().end()); });
}

int64_t Tensor::numel() const {
  return visit([](const auto& a) { return static_cast<int64_t>(a.size()); });
}

template <class T>
const xt::xarray<T>& Tensor::as() const {
  if (const auto* a = std::get_if<xt::xarray<T>>(&data_)) return *a;
  throw Error("tensor is " + std::string(dtype_name(dtype())) + ", not the dtype asked for");
}
template <class T>
xt::xarray<T>& Tensor::as() {
  if (auto* a = std::get_if<xt::xarray<T>>(&data_)) return *a;
  throw Error("tensor is " + std::string(dtype_name(dtype())) + ", not the dtype asked for");
}
template const xt::xarray<float>& Tensor::as<float>() const;
template const xt::xarray<int32_t>& Tensor::as<int32_t>() const;
template const xt::xarray<bool>& Tensor::as<bool>() const;
template const xt::xarray<bfloat16>& Tensor::as<bfloat16>() const;
template xt::xarray<float>& Tensor::as<float>();
template xt::xarray<int32_t>& Tensor::as<int32_t>();
template xt::xarray<bool>& Tensor::as<bool>();
template xt::xarray<bfloat16>& Tensor::as<bfloat16>();

void* Tensor::data() {
  return visit([](auto& a) -> void* { return a.data(); });
}
const void* Tensor::data() const {
  return visit([](const auto& a) -> const void* { return a.data(); });
}

}  // namespace kiln
