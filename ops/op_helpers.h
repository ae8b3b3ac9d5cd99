#pragma once
// Shared pieces for writing OpDefs: attribute specs, dtype and rank checks,
// broadcasting and axis handling for inference, and dtype dispatch for kernels.
// Checks throw kiln::Error with the problem only; the Builder prefixes the op
// signature ("add(f32[2,3], f32[4]): ...").
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>
#include <xtensor/xnoalias.hpp>

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

// Calls f(T{}) with T the C++ element type of `t` (float, int32_t, bool, bfloat16).
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(float{});
    case DType::i32: return f(int32_t{});
    case DType::boolean: return f(bool{});
    case DType::bf16: return f(bfloat16{});
  }
  throw Error("unknown dtype");
}

// The IR dtype of a C++ element type.
template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::f32;
  if constexpr (std::is_same_v<T, int32_t>) return DType::i32;
  if constexpr (std::is_same_v<T, bool>) return DType::boolean;
  if constexpr (std::is_same_v<T, bfloat16>) return DType::bf16;
}

// Like dispatch_dtype, but only instantiates f for the element types Ts (the
// dtypes the op's inference allows), so f need not compile for the others.
template <class... Ts, class F>
void for_dtype(DType t, F&& f) {
  const bool done = ((dtype_of<Ts>() == t ? (f(Ts{}), true) : false) || ...);
  if (!done) {
    std::string msg = "reference kernel got unexpected dtype ";
    msg += dtype_name(t);
    throw Error(msg);
  }
}

// Evaluates an xtensor expression into `out`, keeping the expression's element
// type. Where `out` already holds that type (the pre-allocated result), straight
// into its memory: a new array would hold the result twice at once. The
// expression never reads `out` (kernels read their operands only).
template <class E>
void store(Tensor& out, E&& e) {
  using T = typename std::decay_t<E>::value_type;
  if (out.dtype() == dtype_of<T>()) xt::noalias(out.as<T>()) = std::forward<E>(e);
  else out = Tensor(xt::xarray<T>(std::forward<E>(e)));
}

// One element converted between dtypes, defined for every input: to bool is
// `v != 0`; floating point to i32 truncates toward zero, saturates at the i32
// range and maps NaN to 0 (as LLVM's fptosi.sat), so no input is undefined behaviour.
template <class To, class From>
To convert_element(From v) {
  if constexpr (std::is_same_v<From, bfloat16>) {
    return convert_element<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bfloat16>) {
    return bfloat16(convert_element<float>(v));  // via f32, as the JIT's cast
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_same_v<To, int32_t> && std::is_floating_point_v<From>) {
    if (std::isnan(v)) return 0;
    if (v <= -2147483648.0) return std::numeric_limits<int32_t>::min();
    if (v >= 2147483648.0) return std::numeric_limits<int32_t>::max();
    return static_cast<int32_t>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Axes as xtensor reducers and views want them.
std::vector<std::size_t> xt_axes(const std::vector<int64_t>& axes);

}  // namespace kiln::ops
