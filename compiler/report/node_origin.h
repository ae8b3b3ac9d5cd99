#pragma once
// The model scopes a node of a dumped stage carries (its .kir's loc(...)), as
// the page shows them: the one place the page reads Node::loc. Where the .kir
// was written is not in the printed stages: passes.json carries it (node_sources).
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::compiler {

// "encoder.0.self_attn", "decoder.1.ffn (backward)", sorted; empty: none.
const std::vector<std::string>& scopes_of(const Node& n);

}  // namespace kiln::compiler
