#pragma once
// The `init` attribute of a param or state declaration: how engine/param_init.h
// makes its initial value when the caller binds none (that header describes each
// scheme). The verifier and param_init both read it through init_of(), so
// `kiln check` refuses exactly what `kiln run` would.
//   param %w : f32[784,128] {init="glorot"}
//   param %e : f32[1000,512] {init="normal", std=0.044}
#include "engine/ir/graph.h"

namespace kiln {

// load: none is made; the value comes with the graph (kiln import's weights) and must be bound.
enum class InitScheme { zeros, ones, glorot, normal, sinusoidal, load };

struct Init {
  InitScheme scheme = InitScheme::zeros;
  double stddev = 0.02;  // normal's standard deviation, the `std` attribute
};

// The declaration's scheme: its `init` attribute, or without one "glorot" for a
// param of rank >= 2 and "zeros" for anything else. Throws kiln::Error (not
// naming the declaration: callers do) for an unknown scheme, one its dtype or
// rank does not allow, or a `std` that is not a finite number >= 0.
Init init_of(const ValueInfo& decl);

}  // namespace kiln
