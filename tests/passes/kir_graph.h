#pragma once
// Targeted pass tests write their graphs as .kir text.
#include <string>

#include "compiler/passes/pass_manager.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"

namespace kiln::test {

inline Graph kir(const std::string& body) { return parse_kir("graph @t {\n" + body + "}\n", "test.kir"); }

// The graph after `passes` (verified, invariants checked).
inline Graph after(const Graph& g, std::vector<std::string> passes) {
  compiler::PassOptions opts;
  opts.passes = std::move(passes);
  opts.verify_each = true;
  return compiler::run_passes(g, opts);
}

// The nodes' lines of a graph's text (no header, declarations or outputs), for short expectations.
inline std::string node_lines(const Graph& g) {
  std::string out;
  std::string text = print_kir(g);
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t end = text.find('\n', pos);
    const std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("  %", 0) == 0 || line.rfind("  assign", 0) == 0) out += line.substr(line[2] == '%' ? 3 : 2) + "\n";
  }
  return out;
}

}  // namespace kiln::test
