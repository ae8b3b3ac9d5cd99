#include "ops/families.h"

namespace kiln::ops {

void register_loss(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
