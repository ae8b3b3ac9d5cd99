#pragma once
// Graphviz DOT view of a graph (`dot -Tsvg`): declarations as shapes coloured by
// kind (input, param, state), op nodes labelled with op, non-default attributes and
// result types, edges labelled with the value they carry, outputs as sink nodes.
// A fusion node is a cluster holding its body's nodes, its operands and results
// wired to the body nodes that read and make them.
#include <map>
#include <string>

#include "engine/ir/graph.h"

namespace kiln {

// What a caller adds to a node of the graph (or a fusion's cluster): a line of
// its label and a fill colour ("#rrggbb"), e.g. its planned buffer or its time.
struct DotMark {
  std::string note;
  std::string fill;
};
using DotMarks = std::map<size_t, DotMark>;  // by node index

std::string to_dot(const Graph& g, const DotMarks& marks = {});

}  // namespace kiln
