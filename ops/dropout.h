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

// The same for x holding `examples` examples (its elements split evenly among
// them, example-major) that are examples first_example (i32[]) onwards of a
// larger batch: element i draws what element first_example * (numel(x) /
// examples) + i of the whole batch draws, so a batch cut into parts (ranks of
// a data-parallel job, or --update-freq's micro-batches) draws the masks of the
// whole batch.
Value dropout(Builder& b, Value x, Value key, Value first_example, int64_t examples, double rate, int64_t seed = 0);

// numel(x) / attribute examples: how far apart the examples' first elements are.
int64_t dropout_elements_per_example(const TensorType& x, const Attrs& attrs);

}  // namespace kiln::ops
