#pragma once
// gather: take slices of a table at integer indices along one axis (embedding
// lookup), and scatter_add, its adjoint: add slices into a zero table at indices;
// update_slice: write a block into a tensor at a position known at run time (a
// decoder's key/value cache).
#include <cstdint>

#include "engine/ir/builder.h"

namespace kiln::ops {

// np.take(table, indices, axis): result shape table.shape[:axis] + indices.shape +
// table.shape[axis+1:]. indices is i32; an index outside [0, table.shape[axis]) is
// a run-time kiln::Error.
Value gather(Builder& b, Value table, Value indices, int64_t axis = 0);

// The adjoint of gather: a zero table of shape updates.shape[:axis] + [size] +
// updates.shape[axis+indices.rank:], to which each slice of `updates` is added at
// its index along `axis` (repeated indices accumulate, as np.add.at). `updates` has
// the shape of gather's result for such a table; f32 or i32. An index outside
// [0, size) is a run-time kiln::Error.
Value scatter_add(Builder& b, Value updates, Value indices, int64_t size, int64_t axis = 0);

// x with `update` written at positions [s, s + n) along `axis`, n = update's
// length there (its other dims are x's), s the i32 scalar `start` clamped to
// [0, x.shape[axis] - n] (XLA's dynamic_update_slice). Compiled, the result may
// take x's memory (OpDef::overwrites_operand0): then only the block is written.
Value update_slice(Builder& b, Value x, Value update, Value start, int64_t axis);

}  // namespace kiln::ops
