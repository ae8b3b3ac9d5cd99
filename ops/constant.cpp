#include "ops/families.h"

namespace kiln::ops {

void register_constants(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
