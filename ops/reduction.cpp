#include "ops/families.h"

namespace kiln::ops {

void register_reductions(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
