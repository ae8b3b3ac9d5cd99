#include "compiler/codegen/families.h"

namespace kiln::compiler {

void register_loss_emitters(EmitterRegistry&) {}  // TODO(helper): being written

}  // namespace kiln::compiler
