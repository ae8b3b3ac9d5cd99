#include "ops/families.h"

namespace kiln::ops {

void register_gather(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
