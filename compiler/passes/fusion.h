#pragma once
// Operator fusion, XLA-style: groups of nodes become `fusion` nodes whose bodies
// the JIT compiles into one kernel each (codegen/kernel_codegen.h), so the
// values inside a group never reach memory. Each fusion's `kind` and roles
// (engine/ir/fusion_kind.h: its hero, reductions, column sum, stored product)
// say which of these it is and what it is built around; the schedule and
// codegen read them, and codegen has an emitter per kind.
//
//   epilogue    a loop consumer of a matmul's shape becomes its epilogue, applied to each
//               C block while it is in cache (`relu(x @ w + b)`, `h @ w2 + b2 +
//               residual`, dropout included): the loop takes the matmul as its
//               hero when the matmul's result is used only in the loop, every
//               member reading it (directly or not) is pointwise at its shape.
//               A loop that also stores values for assigns (Adam's update of the
//               param whose gradient the matmul makes: the param and both
//               moments) or whose result is assigned stores the matmul's product
//               in a buffer of its own, so its results may overwrite in place
//               what it reads, and runs right after the matmul or after the last
//               node that still reads an assigned param, whichever is later (at
//               the end of the step it would keep the matmul's operands alive):
//               a weight's gradient is never read back from memory for its
//               update. A sum of the rows of the matmul's B operand (a bias
//               gradient beside x^T dy) that is a kernel of its own and read
//               only after the epilogue runs joins it: the GEMM sums it as it
//               packs B, which it then reads once for both. Operands of the
//               matmul stay in memory (the GEMM packs from there). A reduction, softmax or
//               layer_norm consumer does not take the matmul: it keeps its
//               elemental producers as before (`softmax(q @ k * scale + mask)`
//               stays one attention kernel, and so does `layer_norm(x +
//               dropout(h @ w + b))` when the sum is not needed elsewhere).
//               Giving that chain to the matmul instead would save no kernel and
//               no memory traffic: the normalization would read the epilogue's
//               output where it now reads the matmul's. Where the chain is a
//               loop of its own (training stores the sum for the backward pass),
//               that loop becomes the matmul's epilogue.
//   loop        a consumer absorbs its elemental producers (elementwise,
//               broadcast, reshape, transpose, slice, concat, dropout,
//               constants) into one loop, except those that check their
//               operands at run time (OpDef::may_fail: a gather, an i32
//               division), which stay kernels of their own; a concat of more than 8 operands
//               neither absorbs nor is absorbed (codegen/concat_copies.h: it
//               copies its operands); an extra output is allowed for a member
//               of the loop's shape whose other users are only assigns and graph
//               outputs (Adam's moments next to its param update);
//   input       sum, mean, max, softmax, log_softmax, layer_norm and
//               cross_entropy read their operands through the generators of
//               their elemental producers (`softmax(x * scale + mask)`);
//   row         a loop that also reduces its operands' rows over the last axis
//               (a layer norm's backward, softmax's backward);
//   copies      constants (fill, iota, causal_mask) and ops moving the elements
//               of a declaration are cheap to recompute: each consumer group takes its
//               own copy, computed by the same code, so every copy gives the
//               same bits.
// A producer with users outside its consumer's group is computed once, in its
// own kernel, and read from memory by all of them.
//
// Every decision not to fuse a producer into a consumer has a reason, written to
// `decisions` (--print-fusion-decisions) if given. What fusion knows of each op
// comes from its OpDef: its traits and lowering facts (engine/ir/op_def.h).
// Transposes under a matmul are folded before (transpose-folding), the
// optimizer's updates merged after (horizontal-fusion), and the constants every
// consumer copied are left for dce (passes.h).
#include <iosfwd>

#include "engine/ir/graph.h"

namespace kiln::compiler {

// The graph with fusion nodes; declarations and output names as in `g`.
Graph fuse(const Graph& g, std::ostream* decisions = nullptr);

}  // namespace kiln::compiler
