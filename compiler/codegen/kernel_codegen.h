#pragma once
// One kernel (schedule/kernel.h) as one LLVM function:
//
//   void SYMBOL(void** args)
//     args[i]            the data of the kernel graph's input i (read only)
//     args[n_in + j]     the data of its output j (written)
//     args[n_in + n_out] an int32_t status word (KILN_OK on entry; kernels set a
//                        kiln_error_code on a run-time error, compiler/runtime/kiln_runtime.h)
//   Data is row-major and contiguous; f32 as float, i32 as int32_t, bool as one
//   byte holding 0 or 1. A zero-size value's pointer may be null.
//
// The kernel's structure follows from its graph (the fusion pass only builds
// these shapes, compiler/passes/fusion.h):
//   * no kernel-emitter op (only elemental ones): one loop over the outputs'
//     common shape, each output's generator composed from its producers' (loop fusion);
//   * one kernel-emitter op (a reduction, normalization, loss, matmul, gather...)
//     whose results are the outputs: that op's emitter, reading its operands
//     through generators composed from the elemental producers (input fusion);
//   * one kernel-emitter op that takes an epilogue (matmul) and one output of its
//     result's type computed from it by pointwise ops: the op writes into the
//     output's buffer and applies the output's generator there in place
//     (emitter_registry.h, Epilogue).
// Intermediates of a fused kernel never reach memory.
#include <string>

#include "compiler/codegen/lowering_context.h"
#include "engine/ir/graph.h"

namespace llvm {
class Function;
}

namespace kiln::compiler {

// Emits `kernel` into cx's module as an external function named `symbol`.
// Throws kiln::Error for a graph of another shape or an op with no emitter.
llvm::Function* emit_kernel(LoweringContext& cx, const Graph& kernel, const std::string& symbol);

// Throws kiln::Error("jit: no lowering for op 'X', 'Y'") naming every op of `g`
// (bodies included) that has no emitter, sorted.
void check_lowerable(const Graph& g);

}  // namespace kiln::compiler
