#pragma once
// What a fusion node's kernel is: its kind and its roles. The fusion pass
// (compiler/passes/fusion.h) decides them and records them as the fusion's
// attributes, which .kir prints and parses and the verifier checks against the
// body (verify_fusion, engine/ir/verifier.h); the schedule and codegen read them
// (fusion_roles_of) and work nothing out again. Codegen has an emitter per kind
// (compiler/codegen/kernel_codegen.h).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/attr.h"
#include "engine/ir/graph.h"

namespace kiln {

enum class FusionKind {
  loop,        // elemental ops only: one loop over the outputs' shape
  input,       // one kernel op (a reduction, normalization, loss) whose results are the outputs,
               // reading its elemental producers through their generators (XLA's input fusion)
  row,         // reductions over the last axis and elemental ops, computed row by row
  epilogue,    // a kernel op taking an epilogue (matmul), then elemental ops on its result applied
               // to each block of it in place (XLA's output fusion)
  horizontal,  // loop fusions that share only inputs, its body's parts, run one after the other
               // (an optimizer's updates)
};

std::string_view fusion_kind_name(FusionKind kind);
std::optional<FusionKind> parse_fusion_kind(std::string_view name);
// "loop, input, row, ...": for messages.
std::string fusion_kind_names();
// A fusion node's kind (its `kind` attribute). Throws kiln::Error naming the
// unknown kind and the known ones.
FusionKind fusion_kind_of(const Node& fusion);

// A fusion's roles: its kind and the body nodes (by index in the body, which
// a canonical copy keeps) its kernel is built around. Attributes of the fusion
// node, each left out of .kir where it has its default:
//   kind            the kind (above)
//   hero            input, epilogue: the kernel op (input: its results are the
//                   outputs; epilogue: it takes the epilogue)
//   reductions      row: the reductions over the last axis, folded per row first
//   column_sum      epilogue: an output summing the rows of the hero's operand B
//                   (a bias gradient beside its weight's), which the GEMM sums
//                   as it packs B
//   stores_product  epilogue: the hero's result is an output of its own, so the
//                   epilogue's outputs go to buffers of their own and may
//                   overwrite in place inputs they read at the same index (an
//                   optimizer's update of a param and its moments); otherwise
//                   the hero writes into its one output's buffer and the
//                   epilogue replaces it there
struct FusionRoles {
  FusionKind kind = FusionKind::loop;
  int64_t hero = -1;
  std::vector<int64_t> reductions;
  int64_t column_sum = -1;
  bool stores_product = false;
};

// The roles a fusion's attributes (complete) record. Throws kiln::Error for an
// unknown kind.
FusionRoles fusion_roles(const Attrs& attrs);
// A fusion node's: fusion_roles(fusion.attrs).
FusionRoles fusion_roles_of(const Node& fusion);
// The attributes that record `roles` (the ones at their default left out).
Attrs fusion_attrs(const FusionRoles& roles);

// What kernels of each kind can hold, which the fusion pass builds by and
// verify_fusion checks:

// The most operands of a concat inside a fused kernel (its elemental form costs
// code and time per element in proportion to them: 63 fused operands took 1.2 s
// of LLVM, 8 took 60 ms). A wider concat is a kernel of its own, which copies
// its operands into place (compiler/codegen/concat_copies.h).
constexpr size_t kMaxFusedConcatOperands = 8;

// Whether `n` is a reduction a row kernel of `shape` computes: sum, mean or max of
// an f32 value of that shape over its last axis, keepdims.
bool is_row_reduction_of(const Graph& g, const Node& n, const Shape& shape);

// Whether `n` sums the rows of `gemm`'s B operand, a matmul of rank-2 f32
// operands with B not transposed (a linear layer's bias gradient beside its
// weight's, x^T dy): an epilogue kernel computes such sums as it packs B.
bool is_column_sum_of_b(const Graph& g, const Node& n, const Node& gemm);

// Whether `n` casts an f32 value to bf16 (what --precision bf16's passes make).
bool is_bf16_cast(const Graph& g, const Node& n);
// Whether `n` casts an f32 declaration (a param; in a kernel, an input) to
// bf16: a matmul reading the cast rounds the declaration as it packs it, so
// fusion copies such a cast into every matmul kernel that reads it.
bool is_bf16_cast_of_declaration(const Graph& g, const Node& n);

}  // namespace kiln
