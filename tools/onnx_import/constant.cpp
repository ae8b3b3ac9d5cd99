#include "tools/onnx_import/constant.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/ir/error.h"
#include "engine/tensor/memory_check.h"

namespace kiln::onnx {

namespace {

// The elements of a raw_data field (little-endian, as x86 is).
template <class T>
std::vector<T> raw_elements(const std::string& raw, int64_t count, const std::string& what) {
  const uint64_t need = checked_bytes(static_cast<uint64_t>(count), sizeof(T), what);
  if (raw.size() != need)
    throw Error(what + ": raw data has " + std::to_string(raw.size()) + " bytes, its dims need " +
                std::to_string(need));
  std::vector<T> out(static_cast<size_t>(count));
  if (count > 0) std::memcpy(out.data(), raw.data(), raw.size());
  return out;
}

// The elements of a typed repeated field, converted to T.
template <class T, class Field>
std::vector<T> typed_elements(const Field& field, int64_t count, const std::string& what) {
  if (field.size() != count)
    throw Error(what + ": has " + std::to_string(field.size()) + " values, its dims need " + std::to_string(count));
  return std::vector<T>(field.begin(), field.end());
}

template <class T, class Field>
std::vector<T> elements(const ::onnx::TensorProto& t, const Field& field, int64_t count, const std::string& what) {
  return t.has_raw_data() ? raw_elements<T>(t.raw_data(), count, what) : typed_elements<T>(field, count, what);
}

template <class From>
std::vector<int64_t> widen(const std::vector<From>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

std::vector<float> narrow_doubles(const std::vector<double>& v, const std::string& what) {
  std::vector<float> out;
  out.reserve(v.size());
  for (double d : v) {
    if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
      throw Error(what + ": the f64 value " + std::to_string(d) + " is beyond f32's range");
    out.push_back(static_cast<float>(d));
  }
  return out;
}

[[noreturn]] void no_kiln_dtype(int32_t elem_type, const std::string& what) {
  using P = ::onnx::TensorProto;
  throw Error(what + ": ONNX element type " + P::DataType_Name(static_cast<P::DataType>(elem_type)) +
              " has no kiln dtype (kiln has f32, i32 and bool)");
}

}  // namespace

Constant Constant::integers(std::vector<int64_t> values, Shape shape) {
  return Constant{.dtype = DType::i32, .shape = std::move(shape), .ints = std::move(values)};
}

Constant Constant::from_tensor(const Tensor& t) {
  Constant c{.dtype = t.dtype(), .shape = t.shape()};
  t.visit([&](const auto& a) {
    using T = typename std::decay_t<decltype(a)>::value_type;
    if constexpr (std::is_same_v<T, float>)
      c.reals.assign(a.begin(), a.end());
    else if constexpr (std::is_same_v<T, bfloat16>)
      throw Error("the ONNX importer folds f32, i32 and bool constants, not bf16");
    else
      c.ints.assign(a.begin(), a.end());
  });
  return c;
}

bool Constant::uniform() const {
  if (dtype == DType::f32)
    return std::all_of(reals.begin(), reals.end(), [&](float v) { return std::memcmp(&v, &reals[0], sizeof v) == 0; });
  return std::all_of(ints.begin(), ints.end(), [&](int64_t v) { return v == ints[0]; });
}

Constant Constant::element(size_t i) const {
  if (dtype == DType::f32) return {.dtype = dtype, .reals = {reals.at(i)}};
  return {.dtype = dtype, .ints = {ints.at(i)}};
}

Tensor Constant::to_tensor(const std::string& what) const {
  const std::vector<size_t> xshape = xt_shape(shape);
  if (dtype == DType::f32) {
    Tensor::F32 a = Tensor::F32::from_shape(xshape);
    std::copy(reals.begin(), reals.end(), a.begin());
    return a;
  }
  if (dtype == DType::boolean) {
    Tensor::Bool a = Tensor::Bool::from_shape(xshape);
    std::transform(ints.begin(), ints.end(), a.begin(), [](int64_t v) { return v != 0; });
    return a;
  }
  Tensor::I32 a = Tensor::I32::from_shape(xshape);
  for (size_t i = 0; i < ints.size(); ++i) {
    if (ints[i] < std::numeric_limits<int32_t>::min() || ints[i] > std::numeric_limits<int32_t>::max())
      throw Error(what + ": the integer " + std::to_string(ints[i]) + " does not fit in kiln's i32");
    a.data()[i] = static_cast<int32_t>(ints[i]);
  }
  return a;
}

Constant constant_from_proto(const ::onnx::TensorProto& t, const std::string& what) {
  using P = ::onnx::TensorProto;
  if (t.data_location() == P::EXTERNAL)
    throw Error(what + ": tensor data stored outside the model file is not supported");
  Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape)
    if (d < 0) throw Error(what + ": negative dim " + std::to_string(d));
  int64_t n = 0;
  try {
    n = numel(shape);
  } catch (const Error& e) {
    throw Error(what + ": " + e.what());
  }
  // The dims come from the file: what the Constant will hold (a float or an
  // int64 per element) must fit in memory before any of it is made.
  const DType dtype = checked_dtype_for_element_type(t.data_type(), what);
  checked_bytes(static_cast<uint64_t>(n), dtype == DType::f32 ? sizeof(float) : sizeof(int64_t),
                what + " " + shape_str(shape));
  switch (t.data_type()) {
    case P::FLOAT:
      return {.dtype = DType::f32, .shape = shape, .reals = elements<float>(t, t.float_data(), n, what)};
    case P::DOUBLE:
      return {.dtype = DType::f32,
              .shape = shape,
              .reals = narrow_doubles(elements<double>(t, t.double_data(), n, what), what)};
    case P::INT64:
      return Constant::integers(elements<int64_t>(t, t.int64_data(), n, what), shape);
    // Narrow integers and bool travel in int32_data when not raw.
    case P::INT32:
      return Constant::integers(widen(elements<int32_t>(t, t.int32_data(), n, what)), shape);
    case P::INT16:
      return Constant::integers(widen(elements<int16_t>(t, t.int32_data(), n, what)), shape);
    case P::INT8:
      return Constant::integers(widen(elements<int8_t>(t, t.int32_data(), n, what)), shape);
    case P::UINT8:
      return Constant::integers(widen(elements<uint8_t>(t, t.int32_data(), n, what)), shape);
    case P::UINT16:
      return Constant::integers(widen(elements<uint16_t>(t, t.int32_data(), n, what)), shape);
    case P::BOOL: {
      Constant c = Constant::integers(widen(elements<uint8_t>(t, t.int32_data(), n, what)), shape);
      c.dtype = DType::boolean;
      for (int64_t& v : c.ints) v = v != 0;
      return c;
    }
    default:
      no_kiln_dtype(t.data_type(), what);
  }
}

std::optional<DType> dtype_for_element_type(int32_t elem_type) {
  using P = ::onnx::TensorProto;
  switch (elem_type) {
    case P::FLOAT:
    case P::DOUBLE:
      return DType::f32;
    case P::INT64:
    case P::INT32:
    case P::INT16:
    case P::INT8:
    case P::UINT8:
    case P::UINT16:
      return DType::i32;
    case P::BOOL:
      return DType::boolean;
    default:
      return std::nullopt;
  }
}

DType checked_dtype_for_element_type(int32_t elem_type, const std::string& what) {
  const std::optional<DType> dtype = dtype_for_element_type(elem_type);
  if (!dtype) no_kiln_dtype(elem_type, what);
  return *dtype;
}

}  // namespace kiln::onnx
