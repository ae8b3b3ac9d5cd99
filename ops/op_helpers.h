#pragma once
// Shared pieces for writing OpDefs: attribute specs, dtype and rank checks,
// broadcasting and axis handling for inference, and dtype dispatch for kernels.
// Checks throw kiln::Error with the problem only; the Builder prefixes the op
// signature ("add(f32[2,3], f32[4]): ...").
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/error.h"
#include "engine/ir/op_def.h"
#include "engine/tensor/tensor.h"

namespace kiln::ops {

// ---- attribute specs -------------------------------------------------------

// An attribute that must be given.
AttrSpec required_attr(std::string name, AttrKind kind);
// An attribute with a default; its kind is the default's kind.
AttrSpec optional_attr(std::string name, Attr default_value);

// ---- dtype and rank checks -------------------------------------------------

using DTypes = std::vector<DType>;
inline const DTypes kFloat = {DType::f32};
inline const DTypes kNumeric = {DType::f32, DType::i32};
inline const DTypes kBool = {DType::boolean};
inline const DTypes kAnyDType = {DType::f32, DType::i32, DType::boolean};

std::string dtypes_str(const DTypes& allowed);  // "f32", "f32 or i32", "f32, i32 or bool"

// `role` names the operand in the message: "operand 0", "gamma", "labels".
// Throws e.g. "operand 0 must be f32 or i32, got bool".
void check_dtype(const TensorType& t, const DTypes& allowed, const std::string& role);
// Throws e.g. "operands must have the same dtype, got f32 and i32".
void check_same_dtype(const TensorType& a, const TensorType& b);
// Throws e.g. "operand 0 must have rank 2, got rank 3" / "... at least rank 1 ...".
void check_rank(const TensorType& t, int64_t rank, const std::string& role);
void check_min_rank(const TensorType& t, int64_t min_rank, const std::string& role);
// Throws e.g. "shape must not have negative dims, got [2,-1]".
void check_dims_nonnegative(const Shape& s, const std::string& role);

// "operand 0", "operand 1", ...
std::string operand_role(size_t i);

// ---- inference -------------------------------------------------------------

// Numpy broadcast of all shapes; throws "incompatible shapes [2,3] and [4] for broadcasting".
Shape broadcast_all(const std::vector<Shape>& shapes);

// Normalizes axes against rank (negative count from the end) and returns them
// sorted ascending. Throws on an out-of-range or repeated axis. With
// `empty_means_all`, an empty list stands for every axis.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, bool empty_means_all);

// One operand of an allowed dtype; the result has the operand's type.
InferFn same_type_infer(DTypes allowed);
// Two or more operands of one allowed dtype, broadcast together; the result has
// the broadcast shape and `result` dtype (the operands' dtype if none is given).
InferFn broadcast_infer(DTypes allowed, std::optional<DType> result = std::nullopt);

// ---- kernels ---------------------------------------------------------------

// Calls f(T{}) with T the C++ element type of `t` (float, int32_t, bool).
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::i32: return f(int32_t{});
    case DType::boolean: return f(bool{});
  }
  throw Error("unknown dtype");
}

// Axes as xtensor reducers and views want them.
std::vector<std::size_t> xt_axes(const std::vector<int64_t>& axes);

}  // namespace kiln::ops
