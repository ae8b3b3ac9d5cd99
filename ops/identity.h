#pragma once
#include "engine/ir/builder.h"

namespace kiln::ops {

// y = x. Gives a value a second name (e.g. a gradient output) without changing it.
Value identity(Builder& b, Value x, const std::string& name = {});
// y = x in the forward pass; autodiff sends no gradient through it.
Value stop_gradient(Builder& b, Value x);

}  // namespace kiln::ops
