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
// The kernel's structure is its kind and what it is built around, its roles
// (engine/ir/fusion_kind.h), which the fusion pass decides, records on the
// fusion node and the verifier checks against the body (verify_fusion):
// codegen reads them and works nothing out again. An emitter per kind:
//   * loop: elemental ops only; one loop over the outputs' common shape, each
//     output's generator composed from its producers'; a lone concat copies its
//     operands into place instead (concat_copies.h);
//   * input: the hero, one kernel-emitter op (a reduction, normalization, loss,
//     matmul, gather...) whose results are the outputs: its emitter, reading its
//     operands through generators composed from the elemental producers;
//   * row: the reductions over the last axis (sum, mean, max, keepdims) of f32
//     values of the outputs' shape, and elemental ops: per row, each reduction
//     folds its row into a scalar, then the outputs' row is computed with the
//     scalars broadcast (softmax's backward y * (dy - sum(dy * y)), a layer
//     norm's backward);
//   * epilogue: the hero takes an epilogue (matmul); outputs of its result's
//     shape computed from it by elementwise ops: one output of its type, into
//     whose buffer the op writes and applies the output's generator in place;
//     or, when it stores its product (an output too), several, each stored from
//     its generator, which may overwrite in place inputs the epilogue reads at
//     the same index (an optimizer's update of a param and its moments;
//     emitter_registry.h, Epilogue); and the column sum, if it has one: a sum of
//     the rows of the hero's B operand, an output the GEMM computes as it packs B;
//   * horizontal: loop fusions sharing only inputs (its parts, run one after
//     the other): each distinct part body is one function, called in a loop
//     over a table of its parts' arguments, so the code grows with the
//     distinct bodies only.
// Intermediates of a fused kernel never reach memory.
#include <string>
#include <vector>

#include "compiler/codegen/lowering_context.h"
#include "engine/ir/fusion_kind.h"
#include "engine/ir/graph.h"

namespace llvm {
class Function;
}

namespace kiln::compiler {

// Emits `kernel`, structured as `roles` say (a verified fusion's, or a one-node
// kernel's: schedule/kernel.h), into cx's module as an external function named
// `symbol`. Throws kiln::Error for an op with no emitter.
llvm::Function* emit_kernel(LoweringContext& cx, const Graph& kernel, const FusionRoles& roles,
                            const std::string& symbol);

// Throws kiln::Error("jit: no lowering for op 'X', 'Y'") naming every op of `g`
// (bodies included) that has no emitter, sorted.
void check_lowerable(const Graph& g);

}  // namespace kiln::compiler
