#pragma once
// One registration function per op family's emitters; each lives in the family's
// compiler/codegen/<family>_emitters.cpp and is called by register_all_emitters().
#include "compiler/codegen/emitter_registry.h"

namespace kiln::compiler {

void register_elementwise_emitters(EmitterRegistry& r);  // unary, binary, compare, logic, select, cast
void register_shape_emitters(EmitterRegistry& r);        // identity, stop_gradient, reshape, transpose, broadcast,
                                                         // slice, concat
void register_constant_emitters(EmitterRegistry& r);     // fill, iota, causal_mask
void register_dropout_emitters(EmitterRegistry& r);      // dropout (Philox4x32-10 in IR)
void register_reduction_emitters(EmitterRegistry& r);    // sum, mean, max
void register_normalization_emitters(EmitterRegistry& r);  // softmax, log_softmax, layer_norm
void register_attention_emitters(EmitterRegistry& r);      // flash_attention and its backward
void register_loss_emitters(EmitterRegistry& r);           // cross_entropy
void register_linear_loss_emitters(EmitterRegistry& r);    // linear_cross_entropy and its backward
void register_gather_emitters(EmitterRegistry& r);         // gather, scatter_add
void register_matmul_emitters(EmitterRegistry& r);         // matmul (packed, register-blocked GEMM)

}  // namespace kiln::compiler
