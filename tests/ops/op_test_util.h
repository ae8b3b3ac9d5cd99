#pragma once
// Test helpers for ops: build a one-node graph with the Builder, run it with the
// Interpreter, and compare results with expected arrays.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <source_location>
#include <sstream>
#include <string>
#include <vector>

#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/tensor/tensor.h"

namespace kiln::test {

inline constexpr float kInf = std::numeric_limits<float>::infinity();

// Runs `op(x0, x1, ...) {attrs}` on the given tensors (graph inputs x0, x1, ...)
// and returns its results in order.
inline std::vector<Tensor> run_op(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  Graph g("op_test");
  Builder b(g);
  std::vector<Value> operands;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "x";
    name += std::to_string(i);
    operands.push_back(b.input(name, inputs[i].type()));
  }
  std::vector<std::string> result_names;
  for (Value r : b.emit(op, operands, attrs)) {
    b.output(r);
    result_names.push_back(g.name_of(r));
  }
  Interpreter interp(std::move(g));
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::string name = "x";
    name += std::to_string(i);
    interp.bind(name, inputs[i]);
  }
  interp.run();
  std::vector<Tensor> results;
  for (const std::string& name : result_names) results.push_back(interp.output(name));
  return results;
}

// Same, for an op with exactly one result.
inline Tensor run_op1(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs = {}) {
  std::vector<Tensor> r = run_op(op, inputs, attrs);
  REQUIRE(r.size() == 1);
  return r[0];
}

// The Builder's error message for `op` on operands of these types, or "" if it
// builds. Lets tests check what an inference error says.
inline std::string build_error(const std::string& op, const std::vector<TensorType>& operand_types,
                               const Attrs& attrs = {}) {
  Graph g("op_test");
  Builder b(g);
  std::vector<Value> operands;
  for (size_t i = 0; i < operand_types.size(); ++i) {
    std::string name = "x";
    name += std::to_string(i);
    operands.push_back(b.input(name, operand_types[i]));
  }
  try {
    b.emit(op, operands, attrs);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The result types the Builder infers for `op` on operands of these types.
inline std::vector<TensorType> result_types(const std::string& op, const std::vector<TensorType>& operand_types,
                                            const Attrs& attrs = {}) {
  Graph g("op_test");
  Builder b(g);
  std::vector<Value> operands;
  for (size_t i = 0; i < operand_types.size(); ++i) {
    std::string name = "x";
    name += std::to_string(i);
    operands.push_back(b.input(name, operand_types[i]));
  }
  std::vector<TensorType> types;
  for (Value r : b.emit(op, operands, attrs)) types.push_back(g.type(r));
  return types;
}

// An array of `shape` holding `values` in row-major order. Nested braces cannot
// spell shapes with size-1 dims ({{1.0f}} is ambiguous to xtensor); this can.
template <class T>
xt::xarray<T> shaped(const Shape& shape, std::initializer_list<T> values) {
  if (static_cast<int64_t>(values.size()) != numel(shape)) throw Error("shaped: value count differs from the shape's size");
  xt::xarray<T> a = xt::xarray<T>::from_shape(xt_shape(shape));
  std::copy(values.begin(), values.end(), a.begin());
  return a;
}

// "[2,2] {1, 2, 3, 4}": shape and row-major values. (xtensor's xio printer
// trips a false GCC 12 -Wrestrict warning, so it is not used.)
template <class T>
std::string array_str(const xt::xarray<T>& a) {
  std::ostringstream os;
  os << shape_str(ir_shape(a.shape())) << " {";
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << +a.data()[i];
  os << "}";
  return os.str();
}

// Elementwise closeness with |got - want| <= atol + rtol*|want|; infinities must
// match exactly, and NaN matches NaN.
inline bool close(float got, float want, float atol, float rtol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

// Checks that `got` is f32 with `want`'s shape and values within tolerance.
inline void check_close(const Tensor& got, const xt::xarray<float>& want, float atol = 1e-5f, float rtol = 1e-5f,
                        std::source_location caller = std::source_location::current()) {
  INFO("checked at " << std::string(caller.file_name()) << ":" << caller.line());
  REQUIRE_MESSAGE(got.dtype() == DType::f32, "got dtype " << dtype_name(got.dtype()));
  const auto& g = got.f32();
  REQUIRE_MESSAGE(ir_shape(g.shape()) == ir_shape(want.shape()),
                  "got shape " << shape_str(ir_shape(g.shape())) << ", want " << shape_str(ir_shape(want.shape())));
  bool ok = true;
  for (size_t i = 0; i < want.size(); ++i) ok = ok && close(g.data()[i], want.data()[i], atol, rtol);
  CHECK_MESSAGE(ok, "got " << array_str(g) << ", want " << array_str(want));
}

// Checks that `got` has T's dtype, `want`'s shape and exactly its values.
template <class T>
void check_equal(const Tensor& got, const xt::xarray<T>& want,
                 std::source_location caller = std::source_location::current()) {
  INFO("checked at " << std::string(caller.file_name()) << ":" << caller.line());
  const DType want_dtype = Tensor(want).dtype();
  REQUIRE_MESSAGE(got.dtype() == want_dtype,
                  "got dtype " << dtype_name(got.dtype()) << ", want " << dtype_name(want_dtype));
  const auto& g = got.as<T>();
  REQUIRE_MESSAGE(ir_shape(g.shape()) == ir_shape(want.shape()),
                  "got shape " << shape_str(ir_shape(g.shape())) << ", want " << shape_str(ir_shape(want.shape())));
  CHECK_MESSAGE(g == want, "got " << array_str(g) << ", want " << array_str(want));
}

}  // namespace kiln::test
