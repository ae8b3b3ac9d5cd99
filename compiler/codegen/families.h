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

}  // namespace kiln::compiler
