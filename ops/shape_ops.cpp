#include "ops/families.h"

namespace kiln::ops {

void register_shape_ops(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
