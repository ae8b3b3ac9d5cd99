#pragma once
// Where a node came from, as the dump's page shows it: the model scopes it
// belongs to and the .kir place it was written at. The one place the page
// reads Node::loc.
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::compiler {

struct NodeOrigin {
  std::vector<std::string> scopes;  // "encoder.0.self_attn", "decoder.1.ffn (backward)"
  std::string source;               // "file:line:col"; empty: built in code
};

NodeOrigin origin_of(const Node& n);

}  // namespace kiln::compiler
