#include "engine/ir/dtype.h"

namespace kiln {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::i32: return "i32";
    case DType::boolean: return "bool";
    case DType::bf16: return "bf16";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "f32") return DType::f32;
  if (s == "i32") return DType::i32;
  if (s == "bool") return DType::boolean;
  if (s == "bf16") return DType::bf16;
  return std::nullopt;
}

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::i32: return 4;
    case DType::boolean: return 1;
    case DType::bf16: return 2;
  }
  return 0;
}

}  // namespace kiln
