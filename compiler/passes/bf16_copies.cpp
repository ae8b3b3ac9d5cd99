#include "compiler/passes/bf16_copies.h"

namespace kiln::compiler {

Value Bf16Copies::of(size_t index, Value v) {
  auto it = copies_.find(v);
  if (it == copies_.end())
    it = copies_.emplace(v, rw_.emit(index, "cast", {v}, {{"dtype", DType::bf16}}, rw_.target().name_of(v) + ".bf16"))
             .first;
  return it->second;
}

Value Bf16Copies::widened(size_t index, Value v, const std::string& name) {
  return rw_.emit(index, "cast", {copies_.at(v)}, {{"dtype", DType::f32}}, name + ".widened");
}

}  // namespace kiln::compiler
