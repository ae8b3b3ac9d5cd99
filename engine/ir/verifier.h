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

// A fusion node's kind and roles (its complete attributes: engine/ir/fusion_kind.h)
// against its verified body: each kind's roles are set and no others, each names a body
// node that can play it (an input or epilogue fusion's hero is the kernel op
// whose results or epilogue make the outputs, a row fusion's reductions are
// over the outputs' last axis, an epilogue's column sum sums its hero's B),
// every kernel op of the body has its role, and the body's outputs are what
// its kind makes. Throws kiln::Error naming the kind, the role and the body
// node. verify_problems runs it on every fusion node.
void verify_fusion(const Attrs& attrs, const Graph& body);

// Throws kiln::Error with all problems, one per line.
void verify(const Graph& g);

}  // namespace kiln
