#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace kiln {

enum class DType { f32, i32, boolean, bf16 };  // bf16: engine/ir/bfloat16.h

std::string_view dtype_name(DType t);                  // "f32", "i32", "bool", "bf16"
std::optional<DType> parse_dtype(std::string_view s);  // inverse of dtype_name
std::size_t dtype_size(DType t);                       // bytes per element
inline bool is_floating_point(DType t) { return t == DType::f32 || t == DType::bf16; }

}  // namespace kiln
