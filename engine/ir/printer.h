#pragma once
// The canonical .kir text of a graph: declarations in declaration order, then
// nodes in order, then outputs. print_kir(parse_kir(print_kir(g))) == print_kir(g).
#include <string>

#include "engine/ir/graph.h"

namespace kiln {

struct PrintOptions {
  // Each node's scopes as a trailing `loc("encoder.0.ffn", ...)`. Off for a
  // kernel's text, the kernel cache's key: the same kernel in every layer is one.
  bool locations = true;
};

std::string print_kir(const Graph& g, PrintOptions options = {});

// The attributes of a node that differ from its op's schema defaults (nodes store
// completed attributes; the text form shows only what was chosen).
Attrs non_default_attrs(const Node& n);

// "{name=value, ...}" sorted by name; "" for no attributes.
std::string attrs_text(const Attrs& attrs);

}  // namespace kiln
