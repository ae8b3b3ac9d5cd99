#pragma once
// Operator fusion, XLA-style: groups of nodes become `fusion` nodes whose bodies
// the JIT compiles into one kernel each (codegen/kernel_codegen.h), so the
// values inside a group never reach memory.
//
//   matmul      absorbs a transpose of the last two axes of an operand into its
//               transpose flag (the GEMM's packing reads either layout);
//   loop        a consumer absorbs its elemental producers (elementwise,
//               broadcast, reshape, transpose, slice, concat, gather, dropout,
//               constants) into one loop; an extra output is allowed for a member
//               of the loop's shape whose other users are only assigns and graph
//               outputs (Adam's moments next to its param update);
//   reduction   sum, mean, max, softmax, log_softmax, layer_norm and
//               cross_entropy read their operands through the generators of
//               their elemental producers; `softmax(x * scale + mask)` is the
//               `attention` kind;
//   copies      constants (fill, iota, causal_mask) and index ops of a
//               declaration are cheap to recompute: each consumer group takes its
//               own copy, computed by the same code, so every copy gives the
//               same bits.
// A producer with users outside its consumer's group is computed once, in its
// own kernel, and read from memory by all of them.
//
// Every decision not to fuse a producer into a consumer has a reason, written to
// `decisions` (--print-fusion-decisions) if given.
#include <iosfwd>

#include "engine/ir/graph.h"

namespace kiln::compiler {

// The graph with fusion nodes; declarations and output names as in `g`.
Graph fuse(const Graph& g, std::ostream* decisions = nullptr);

}  // namespace kiln::compiler
