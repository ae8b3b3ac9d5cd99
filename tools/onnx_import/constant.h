#pragma once
// An ONNX tensor whose value is known at import time: a Constant node, an integer
// initializer, a Shape, or anything computed from those alone (fold.h). Integers
// stay int64 (ONNX's index type: Slice's "to the end" is INT64_MAX) until they
// become a kiln i32 tensor, which checks that every value fits.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/shape.h"
#include "engine/tensor/tensor.h"

namespace onnx {
class TensorProto;
}

namespace kiln::onnx {

struct Constant {
  DType dtype = DType::f32;   // f32, i32 (held as int64 in `ints`) or boolean (0/1 in `ints`)
  Shape shape = {};
  std::vector<float> reals = {};   // dtype f32
  std::vector<int64_t> ints = {};  // dtype i32 or boolean

  static Constant integers(std::vector<int64_t> values, Shape shape);  // i32
  static Constant from_tensor(const Tensor& t);

  int64_t numel() const { return kiln::numel(shape); }
  TensorType type() const { return {dtype, shape}; }
  // Element i as a double (for fill values and scalar attributes).
  double at(size_t i) const { return dtype == DType::f32 ? reals.at(i) : static_cast<double>(ints.at(i)); }
  // Whether every element is equal, so a `fill` can make it.
  bool uniform() const;
  // Element i as a scalar constant.
  Constant element(size_t i) const;
  // The kiln tensor; throws kiln::Error naming `what` and the value if an integer
  // does not fit in i32.
  Tensor to_tensor(const std::string& what) const;
};

// An ONNX TensorProto (initializer or Constant attribute): float and double
// become f32 (an error names a double beyond f32's range), int64, int32, int16,
// int8, uint8 and uint16 become integers, bool stays bool. Other element types,
// external data and data sizes that do not match the dims are errors naming `what`.
Constant constant_from_proto(const ::onnx::TensorProto& t, const std::string& what);

// The kiln dtype of an ONNX element type (TensorProto::DataType), as above:
// float and double f32, the integers up to int64 i32, bool boolean; nullopt for
// the others.
std::optional<DType> dtype_for_element_type(int32_t elem_type);
// The same, or kiln::Error "WHAT: ONNX element type NAME has no kiln dtype ...".
DType checked_dtype_for_element_type(int32_t elem_type, const std::string& what);

}  // namespace kiln::onnx
