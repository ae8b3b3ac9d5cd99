#pragma once
// gather: take slices of a table at integer indices along one axis (embedding lookup).
#include <cstdint>

#include "engine/ir/builder.h"

namespace kiln::ops {

// np.take(table, indices, axis): result shape table.shape[:axis] + indices.shape +
// table.shape[axis+1:]. indices is i32; an index outside [0, table.shape[axis]) is
// a run-time kiln::Error.
Value gather(Builder& b, Value table, Value indices, int64_t axis = 0);

}  // namespace kiln::ops
