#include "ops/identity.h"

#include "engine/tensor/tensor.h"
#include "ops/families.h"

namespace kiln::ops {

Value identity(Builder& b, Value x, const std::string& name) { return b.emit1("identity", {x}, {}, name); }
Value stop_gradient(Builder& b, Value x) { return b.emit1("stop_gradient", {x}); }

static OpDef pass_through(std::string name, std::string summary) {
  OpDef d;
  d.name = std::move(name);
  d.summary = std::move(summary);
  d.min_operands = d.max_operands = 1;
  d.infer = [](const std::vector<TensorType>& in, const Attrs&) { return std::vector<TensorType>{in[0]}; };
  d.reference = [](const KernelArgs& a) { *a.out[0] = *a.in[0]; };
  return d;
}

void register_identity(OpRegistry& r) {
  OpDef id = pass_through("identity", "y = x");
  id.gradient = [](Builder&, const Node&, const std::vector<Value>& dy) { return std::vector<Value>{dy[0]}; };
  r.add(std::move(id));
  // Its rule returns no gradient, which cuts the path (an op with no rule at all
  // is an error in grad, not a cut).
  OpDef stop = pass_through("stop_gradient", "y = x, with no gradient flowing back to x");
  stop.gradient = [](Builder&, const Node&, const std::vector<Value>&) { return std::vector<Value>{Value{}}; };
  r.add(std::move(stop));
}

}  // namespace kiln::ops
