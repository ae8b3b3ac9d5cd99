#pragma once
// Graphviz DOT view of a graph (`dot -Tsvg`): declarations as shapes coloured by
// kind (input, param, state), op nodes labelled with op, non-default attributes and
// result types, edges labelled with the value they carry, outputs as sink nodes.
#include <string>

#include "engine/ir/graph.h"

namespace kiln {

std::string to_dot(const Graph& g);

}  // namespace kiln
