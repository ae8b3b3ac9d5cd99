#pragma once
// dropout: zero each element with probability `rate`, scale the rest by 1/(1-rate).
#include <cstdint>

#include "engine/ir/builder.h"

namespace kiln::ops {

// x f32, key i32[] (e.g. the training step). The mask comes from Philox4x32-10
// keyed by `seed` with the element index and `key` as counter (scheme in
// engine/tensor/philox.h): same seed and key, same mask. 0 <= rate < 1; rate 0 is
// the identity.
Value dropout(Builder& b, Value x, Value key, double rate, int64_t seed = 0);

}  // namespace kiln::ops
