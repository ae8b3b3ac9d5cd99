#pragma once
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln {

// Every invariant of a Graph: known ops, operand counts, defined-before-use (so
// acyclic), attributes complete and of the schema's kinds, stored result types
// equal to inference, names unique, outputs valid, each param/state assigned at
// most once with its own type, a param's or state's `init` one it can have
// (init_scheme.h). Returns one message per problem, naming the node or declaration.
std::vector<std::string> verify_problems(const Graph& g);

// Throws kiln::Error with all problems, one per line.
void verify(const Graph& g);

}  // namespace kiln
