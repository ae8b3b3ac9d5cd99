#pragma once
// One registration function per op family; each lives in the family's .cpp.
#include "engine/ir/op_def.h"

namespace kiln::ops {

void register_elementwise(OpRegistry& r);    // elementwise.cpp: unary, binary, compare, select, cast
void register_reductions(OpRegistry& r);     // reduction.cpp: sum, mean, max
void register_constants(OpRegistry& r);      // constant.cpp: fill, iota, causal_mask
void register_normalization(OpRegistry& r);  // normalization.cpp: softmax, log_softmax, layer_norm
void register_shape_ops(OpRegistry& r);      // shape_ops.cpp: reshape, transpose, broadcast, slice, concat
void register_matmul(OpRegistry& r);         // matmul.cpp: matmul, batched matmul
void register_gather(OpRegistry& r);         // gather.cpp
void register_dropout(OpRegistry& r);        // dropout.cpp (Philox RNG in engine/tensor/philox.h)
void register_attention(OpRegistry& r);     // attention.cpp: flash_attention and its backward
void register_loss(OpRegistry& r);           // loss.cpp: cross_entropy
void register_linear_cross_entropy(OpRegistry& r);  // linear_cross_entropy.cpp: and its backward
void register_assign(OpRegistry& r);         // assign.cpp
void register_identity(OpRegistry& r);       // identity.cpp: identity, stop_gradient
void register_collectives(OpRegistry& r);    // collective.cpp: allreduce
void register_fusion(OpRegistry& r);         // fusion.cpp: a kernel of several ops, with a body

}  // namespace kiln::ops
