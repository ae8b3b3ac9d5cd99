#pragma once
// Host tensors: an xtensor array of one of the IR's dtypes, row-major and contiguous.
#include <cstdint>
#include <variant>
#include <xtensor/xarray.hpp>

#include "engine/ir/bfloat16.h"
#include "engine/ir/shape.h"

namespace kiln {

class Tensor {
 public:
  using F32 = xt::xarray<float>;
  using I32 = xt::xarray<int32_t>;
  using Bool = xt::xarray<bool>;
  using BF16 = xt::xarray<bfloat16>;

  Tensor() : data_(F32::from_shape({})) {}
  Tensor(F32 a) : data_(std::move(a)) {}   // NOLINT: implicit by design
  Tensor(I32 a) : data_(std::move(a)) {}   // NOLINT
  Tensor(Bool a) : data_(std::move(a)) {}  // NOLINT
  Tensor(BF16 a) : data_(std::move(a)) {}  // NOLINT

  // Throws kiln::Error naming the type and its bytes if they exceed the machine's
  // memory (memory_check.h).
  static Tensor zeros(const TensorType& t);
  static Tensor scalar(float v) { return Tensor(F32(v)); }

  DType dtype() const { return static_cast<DType>(data_.index()); }
  Shape shape() const;
  TensorType type() const { return {dtype(), shape()}; }
  int64_t numel() const;

  // The array of type T; throws kiln::Error if the dtype differs.
  template <class T>
  const xt::xarray<T>& as() const;
  template <class T>
  xt::xarray<T>& as();
  const F32& f32() const { return as<float>(); }
  F32& f32() { return as<float>(); }
  const I32& i32() const { return as<int32_t>(); }
  I32& i32() { return as<int32_t>(); }
  const Bool& b8() const { return as<bool>(); }
  Bool& b8() { return as<bool>(); }
  const BF16& bf16() const { return as<bfloat16>(); }
  BF16& bf16() { return as<bfloat16>(); }

  void* data();
  const void* data() const;
  std::size_t nbytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype()); }

  // Calls f(array) with the array of whatever dtype this tensor holds.
  template <class F>
  decltype(auto) visit(F&& f) { return std::visit(std::forward<F>(f), data_); }
  template <class F>
  decltype(auto) visit(F&& f) const { return std::visit(std::forward<F>(f), data_); }

 private:
  std::variant<F32, I32, Bool, BF16> data_;  // index order matches DType
};

// xtensor shape <-> IR shape.
std::vector<std::size_t> xt_shape(const Shape& s);
Shape ir_shape(const xt::svector<std::size_t, 4>& s);
Shape ir_shape(const std::vector<std::size_t>& s);

}  // namespace kiln
