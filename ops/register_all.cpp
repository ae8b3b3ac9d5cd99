#include "ops/register_all.h"

#include "engine/ir/op_def.h"
#include "ops/families.h"

namespace kiln {

void register_all_ops() {
  static const bool done = [] {
    OpRegistry& r = OpRegistry::global();
    ops::register_elementwise(r);
    ops::register_reductions(r);
    ops::register_constants(r);
    ops::register_normalization(r);
    ops::register_attention(r);
    ops::register_shape_ops(r);
    ops::register_matmul(r);
    ops::register_gather(r);
    ops::register_dropout(r);
    ops::register_loss(r);
    ops::register_linear_cross_entropy(r);
    ops::register_assign(r);
    ops::register_identity(r);
    ops::register_collectives(r);
    ops::register_fusion(r);
    return true;
  }();
  (void)done;
}

}  // namespace kiln
