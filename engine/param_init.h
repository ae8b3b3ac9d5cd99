#pragma once
// Initial values for params and state the caller left unbound.
//
// A declaration's `init` attribute picks the scheme:
//   param %w : f32[784,128] {init="glorot"}
//   "zeros", "ones"  every element 0 / 1 (false / true for bool)
//   "glorot"         uniform in [-a, a), a = sqrt(6 / (fan_in + fan_out)),
//                    fan_in = shape[-2], fan_out = shape[-1]; f32, rank >= 2
//   "normal"         N(0, std^2), std from the float attribute `std` (default 0.02); f32
//   "sinusoidal"     the Transformer's positional encodings, f32[positions, D]:
//                    PE[pos, 2i] = sin(pos / 10000^(2i/D)), PE[pos, 2i+1] = cos(pos / 10000^(2i/D)),
//                    computed in double and rounded once to f32; no random draws
//   "load"           none: the value comes with the graph (kiln import's weights,
//                    written beside it) and must be bound; never made up
// Without `init`, a param of rank >= 2 is "glorot" and any other param "zeros";
// state is "zeros".
//
// Random draws are deterministic in (seed, declaration name) alone, so adding or
// reordering declarations changes no other tensor. Element i of a tensor draws
//   (u0, u1, _, _) = philox4x32_10(counter = (i lo, i hi, h lo, h hi), key = (seed lo, seed hi))
// with h the 64-bit FNV-1a hash of the name, and uses
//   uniform   U = (u0 >> 8) * 2^-24 in [0, 1), scaled to [-a, a) as -a + 2a*U
//   normal    Box-Muller: std * sqrt(-2 ln U1) * cos(2 pi U0), U1 = ((u1 >> 8) + 1) * 2^-24 in (0, 1]
#include <cstdint>

#include "engine/executable.h"
#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"

namespace kiln {

// The initial tensor of a param or state declaration. Throws kiln::Error naming
// the declaration for an unknown scheme or one its dtype/rank does not allow.
Tensor initial_value(const ValueInfo& decl, uint64_t seed);

// Binds initial_value() to every param and state of `exe` that is not bound yet.
// Throws kiln::Error naming every unbound one whose init is "load", before
// binding anything.
void bind_initial_values(Executable& exe, uint64_t seed);

}  // namespace kiln
