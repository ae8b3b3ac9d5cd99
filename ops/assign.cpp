#include "ops/families.h"

namespace kiln::ops {

void register_assign(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
