#pragma once
// The kinds of fusion node: the `kind` attribute of `fusion` (printed and parsed
// in .kir, checked by the verifier) says how the one kernel a fusion becomes is
// structured. The fusion pass decides it (compiler/passes/fusion.h) and codegen
// dispatches on it, an emitter per kind (compiler/codegen/kernel_codegen.h),
// without working the structure out again.
#include <optional>
#include <string>
#include <string_view>

namespace kiln {

struct Node;

enum class FusionKind {
  loop,                // elemental ops only: one loop over the outputs' shape
  input,               // one kernel op (a reduction, normalization, loss) whose results are the outputs,
                       // reading its elemental producers through their generators (XLA's input fusion)
  attention,           // the input fusion of softmax(x * scale + mask)
  row,                 // reductions over the last axis and elemental ops, computed row by row
  attention_backward,  // the row fusion of softmax's backward, y * (dy - sum(dy * y)) * scale
  epilogue,            // a kernel op taking an epilogue (matmul), then elemental ops on its result applied
                       // to each block of it in place (XLA's output fusion)
  horizontal,          // loop fusions that share only inputs, its body's parts, run one after the other
                       // (an optimizer's updates)
};

std::string_view fusion_kind_name(FusionKind kind);
std::optional<FusionKind> parse_fusion_kind(std::string_view name);
// "loop, input, attention, ...": for messages.
std::string fusion_kind_names();
// A fusion node's kind (its `kind` attribute). Throws kiln::Error naming the
// unknown kind and the known ones.
FusionKind fusion_kind_of(const Node& fusion);

}  // namespace kiln
