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
// The kernel's structure is its kind (engine/ir/fusion_kind.h), which the
// fusion pass decides (compiler/passes/fusion.h); an emitter per kind, each
// checking that the body fits it (a kiln::Error naming the kernel and kind if
// not, never a guess at another structure):
//   * loop: elemental ops only; one loop over the outputs' common shape, each
//     output's generator composed from its producers'; a lone concat copies its
//     operands into place instead (concat_copies.h);
//   * input, attention: one kernel-emitter op (a reduction, normalization,
//     loss, matmul, gather...) whose results are the outputs: that op's emitter,
//     reading its operands through generators composed from the elemental
//     producers;
//   * row, attention_backward: reductions over the last axis (sum, mean, max,
//     keepdims) of f32 values of the outputs' shape, and elemental ops: per row,
//     each reduction folds its row into a scalar, then the outputs' row is
//     computed with the scalars broadcast (softmax's backward y * (dy - sum(dy *
//     y)), a layer norm's backward);
//   * epilogue: one kernel-emitter op that takes an epilogue (matmul) and
//     outputs of its result's shape computed from it by elementwise ops: one
//     output of its type, into whose buffer the op writes and applies the
//     output's generator in place; or, when its result is an output too (stored),
//     several, each stored from its generator, which may overwrite in place
//     inputs the epilogue reads at the same index (an optimizer's update of a
//     param and its moments; emitter_registry.h, Epilogue); and at most one
//     other kernel op, a sum of the rows of the matmul's B operand, an output
//     the GEMM computes as it packs B (is_column_sum_of_b);
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

// Emits `kernel`, structured as `kind`, into cx's module as an external
// function named `symbol`. Throws kiln::Error for a graph that does not fit its
// kind or an op with no emitter.
llvm::Function* emit_kernel(LoweringContext& cx, const Graph& kernel, FusionKind kind, const std::string& symbol);

// The kernel graph's kernel ops (ops with a kernel emitter, not an elemental
// one), in order: an input or epilogue kernel has one, a row kernel its reductions.
std::vector<const Node*> kernel_ops(const Graph& kernel);

// An epilogue kernel's kernel op that takes the epilogue (its matmul), or null.
const Node* epilogue_hero(const Graph& kernel);

// Whether `n` casts an f32 declaration (a param; in a kernel, an input) to
// bf16: a matmul reading the cast rounds the declaration as it packs it, so
// fusion copies such a cast into every matmul kernel that reads it.
bool is_bf16_cast_of_declaration(const Graph& g, const Node& n);

// Whether `n` sums the rows of `gemm`'s B operand, a matmul of rank-2 f32
// operands with B not transposed (a linear layer's bias gradient beside its
// weight's, x^T dy): an epilogue kernel computes such sums as it packs B.
bool is_column_sum_of_b(const Graph& g, const Node& n, const Node& gemm);

// Whether `n` is a reduction a row kernel of `shape` computes: sum, mean or max of
// an f32 value of that shape over its last axis, keepdims.
bool is_row_reduction_of(const Graph& g, const Node& n, const Shape& shape);

// Throws kiln::Error("jit: no lowering for op 'X', 'Y'") naming every op of `g`
// (bodies included) that has no emitter, sorted.
void check_lowerable(const Graph& g);

}  // namespace kiln::compiler
