#include "ops/families.h"

namespace kiln::ops {

void register_dropout(OpRegistry&) {}  // TODO(helper): fill in

}  // namespace kiln::ops
