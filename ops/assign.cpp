#include "ops/assign.h"

#include "ops/families.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

void assign(Builder& b, Value target, Value value) { b.emit("assign", {target, value}); }

void register_assign(OpRegistry& r) {
  r.add(OpDef{.name = "assign",
              .summary = "target := value at the end of the step (target: a param or state)",
              .min_operands = 2,
              .max_operands = 2,
              .infer =
                  [](const std::vector<TensorType>& in, const Attrs&) {
                    if (!(in[0] == in[1]))
                      throw Error(std::string("value's type ")
                                      .append(type_str(in[1]))
                                      .append(" differs from the target's ")
                                      .append(type_str(in[0])));
                    return std::vector<TensorType>{};
                  },
              // No reference kernel: executables apply side effects themselves (Interpreter::execute).
              .side_effect = true});
}

}  // namespace kiln::ops
