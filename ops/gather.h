#pragma once
// gather: take slices of a table at integer indices along one axis (embedding
// lookup), and scatter_add, its adjoint: add slices into a zero table at indices.
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

}  // namespace kiln::ops
