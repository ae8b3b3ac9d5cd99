#include "compiler/codegen/families.h"

namespace kiln::compiler {

void register_gather_emitters(EmitterRegistry&) {}  // TODO(helper): being written

}  // namespace kiln::compiler
