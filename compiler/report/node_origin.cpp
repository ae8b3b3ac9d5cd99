#include "compiler/report/node_origin.h"

namespace kiln::compiler {

NodeOrigin origin_of(const Node& n) {
  return {{}, n.loc.file.empty() ? std::string() : n.loc.str()};
}

}  // namespace kiln::compiler
