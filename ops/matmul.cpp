#include "ops/families.h"

namespace kiln::ops {

void register_matmul(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
