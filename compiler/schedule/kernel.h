#pragma once
// A kernel: what one call of the lowered program runs. Every kernel is a
// standalone graph, its inputs the call's operands and its outputs the call's
// results: a fusion node's body, or a one-node graph around a plain node. Its
// canonical text (the graph printed with names i0.., t0..) is what identifies it:
// two nodes with equal text compile to one function, within a program (a
// Transformer's layers repeat the same kernels), across programs of one process
// (bucket shapes share Adam's), and across processes (the on-disk cache).
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/fusion_kind.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

struct Kernel {
  std::shared_ptr<const Graph> graph;  // standalone: inputs, nodes, outputs
  // How codegen structures it: the fusion's kind and roles (its hero, ...,
  // by node index, which the canonical copy keeps); a one-node kernel is a
  // loop (an elemental op) or an input kernel, the node its hero (a kernel op,
  // its results the outputs).
  FusionRoles roles;
  // What profiles, dumps and perf's map call it: the op of a one-node kernel
  // or of an input or epilogue fusion's hero ("matmul", "layer_norm"), else
  // the kind ("loop", "row").
  std::string label;
  std::string text;                    // canonical text: the kind, then the graph
  uint64_t hash = 0;                   // FNV-1a of `text`
  // (input, output) pairs that may share memory, sorted: a loop kernel reading the
  // input only at the index it writes the output, through elementwise ops (memory planning).
  std::vector<std::pair<size_t, size_t>> in_place;
};

// The kernel that runs `node` of `g` (not an assign).
Kernel make_kernel(const Graph& g, const Node& node);

// `g` with canonical names: graph @k, inputs %i0.., node results %t0.. in order.
Graph canonical_copy(const Graph& g);

// "row 6 ops f32[32,4,32,32]": a kernel's label, node count and first
// result, how profiles and perf's map name it.
std::string describe(const Kernel& k);

}  // namespace kiln::compiler
