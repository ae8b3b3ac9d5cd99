#include "ops/families.h"

namespace kiln::ops {

void register_normalization(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
