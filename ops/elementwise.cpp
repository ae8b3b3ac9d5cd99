#include "ops/families.h"

namespace kiln::ops {

void register_elementwise(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
