#pragma once
// The forward check of one sample: the interpreter's results against the JIT's,
// run at 1 and at 2 threads (which must also agree bit for bit).
#include "compiler/jit_executable.h"
#include "op_info.h"

namespace kiln::test {

// JIT options that compile each op of a graph alone: dce is the only pass, and it
// removes nothing from a sample's graph.
compiler::JitOptions unfused_options(const std::string& target_cpu = "");

// Runs `g` (the row's graph of `s`) on both backends and CHECKs every output and
// final param/state with the row's compare (or tolerance). Returns the graph the
// JIT compiled (after its passes).
Graph check_forward(const OpInfo& row, const Sample& s, const Graph& g, const compiler::JitOptions& options);

// Whether a fusion node of `compiled` has a node of `op` in its body.
bool fused_into_kernel(const Graph& compiled, const std::string& op);

}  // namespace kiln::test
