#include "ops/identity.h"

#include "engine/tensor/tensor.h"
#include "ops/families.h"

namespace kiln::ops {

Value identity(Builder& b, Value x, const std::string& name) { return b.emit1("identity", {x}, {}, name); }
Value stop_gradient(Builder& b, Value x) { return b.emit1("stop_gradient", {x}); }

static OpDef pass_through(std::string name, std::string summary, GradientFn gradient) {
  return OpDef{.name = std::move(name),
               .summary = std::move(summary),
               .min_operands = 1,
               .max_operands = 1,
               .infer = [](const std::vector<TensorType>& in, const Attrs&) { return std::vector<TensorType>{in[0]}; },
               .reference = [](const KernelArgs& a) { *a.out[0] = *a.in[0]; },
               .gradient = std::move(gradient),
               .elementwise = true,
               .moves_elements = true,
               .lowering = Lowering::elemental};
}

void register_identity(OpRegistry& r) {
  r.add(pass_through("identity", "y = x",
                     [](Builder&, const Node&, const std::vector<Value>& dy) { return std::vector<Value>{dy[0]}; }));
  // Its rule returns no gradient, which cuts the path (an op with no rule at all
  // is an error in grad, not a cut).
  r.add(pass_through("stop_gradient", "y = x, with no gradient flowing back to x",
                     [](Builder&, const Node&, const std::vector<Value>&) { return std::vector<Value>{Value{}}; }));
}

}  // namespace kiln::ops
