#include "compiler/report/node_origin.h"

namespace kiln::compiler {

const std::vector<std::string>& scopes_of(const Node& n) { return n.loc.scopes; }

}  // namespace kiln::compiler
