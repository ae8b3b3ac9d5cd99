#pragma once
// Building blocks of the rows' sample generators: random operands, edge values
// of f32, values kept away from kinks for finite differences, indices, and
// shapes that combine.
#include <string>
#include <vector>

#include "op_info.h"

namespace kiln::test {

// Random operands of these types (differential.h's random_tensor).
std::vector<Tensor> random_operands(Rng& rng, const std::vector<TensorType>& types, Values values = Values::any);

// Overwrites f32 `x` with the edges of f32 line by line along the last axis,
// each line all one value or mixed: zeros of both signs, subnormals,
// infinities, nan, a few ordinary values, and with `huge` large values (whose
// squares and sums overflow, or whose f32 sums lose all precision).
void fill_special_values(Rng& rng, Tensor& x, bool huge = true);

// Values uniform in [lo, hi) (gradcheck.h's random_tensor, seeded from rng).
Tensor uniform(Rng& rng, const Shape& shape, float lo = -1.0f, float hi = 1.0f);

// Values with |x| in [margin, margin + 1) and random signs: away from a kink at 0.
Tensor away_from_zero(Rng& rng, const Shape& shape, float margin);

// Values 0.4 * k + offset + noise (|noise| <= 0.05) for integers k: two such
// tensors with offsets 0 and 0.2 differ by at least 0.1 everywhere, far from
// the ties of maximum and minimum at the finite-difference step.
Tensor on_grid(Rng& rng, const Shape& shape, float offset);

// Distinct values 0.1 apart in a random order: no ties for max.
Tensor distinct_values(Rng& rng, const Shape& shape);

// i32 indices in [0, dim) of this shape, drawn from few values so that duplicates are common.
Tensor random_indices(Rng& rng, const Shape& shape, int64_t dim);

// Shape `batch` followed by `last`.
Shape concat_shapes(Shape batch, const Shape& last);

}  // namespace kiln::test
