#pragma once
// flash_attention and flash_attention_backward past a few dozen keys, up to
// long sequences (attention_blocked.cpp): FlashAttention 2's blocks, whose loops
// over keys and queries run at run time and whose buffers are sized by the
// blocks, never by the sequence.
#include "compiler/codegen/emitter_registry.h"

namespace kiln::compiler {

// Whether the node (either op) takes the blocked kernels rather than the row
// kernel (attention_emitters.cpp), which unrolls every key vector of a row.
bool takes_blocked_attention(const KernelEmitArgs& args);

void emit_blocked_attention_forward(const KernelEmitArgs& args);
void emit_blocked_attention_backward(const KernelEmitArgs& args);

}  // namespace kiln::compiler
