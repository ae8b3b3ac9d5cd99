#pragma once
// The lowering driver: one graph -> one LLVM module with one entry function that
// runs every node's kernel in graph order.
//
// Entry ABI (C):  void ENTRY(void** buffers);
//   buffers[v.id], for every value v of the graph (Graph::num_values() of them):
//     the data of v, row-major and contiguous; f32 as float, i32 as int32_t, bool
//     as one byte holding 0 or 1. Inputs, params and state are only read; node
//     results are written (each exactly once). A zero-size value's pointer may be null.
//   buffers[graph.num_values()]: an int32_t status word, KILN_OK (0) on entry;
//     kernels set it to a kiln_error_code (compiler/runtime/kiln_runtime.h) on a
//     run-time error such as an integer division by zero, and finish the run.
//   `assign` nodes emit no code: the caller reads their value operand's buffer
//   after the call and commits it to the target (after the whole step).
//   Kernels call kiln_parallel_for from the runtime; the entry is not reentrant
//   for the same buffers, but distinct buffer tables may run concurrently.
// (Memory planning, a later stage, will replace the one-buffer-per-value table.)
#include <memory>
#include <string>
#include <vector>

#include "compiler/jit/target.h"
#include "engine/ir/graph.h"

namespace llvm {
class LLVMContext;
class Module;
}  // namespace llvm

namespace kiln::compiler {

struct LoweredGraph {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;  // unoptimized; belongs to `context`
  std::string entry;                     // the entry function's name
  double lower_ms = 0;
  LoweredGraph();
  LoweredGraph(LoweredGraph&&) noexcept;
  ~LoweredGraph();
};

// Throws kiln::Error("jit: no lowering for op 'matmul'") if any op of the graph has
// no emitter (naming every such op, sorted).
void check_lowerable(const Graph& g);

// Lowers a verified graph for `target`. Throws kiln::Error.
LoweredGraph lower_graph(const Graph& g, const Target& target, const std::string& entry = "kiln_main");

}  // namespace kiln::compiler
