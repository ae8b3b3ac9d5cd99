#pragma once
// Finite-difference gradient checks over the interpreter's reference kernels.
//
// The kernels compute in f32, so the checks use central differences in float:
// with step h the truncation error is O(h^2 * f''') and the rounding error about
// eps_f32 * |L| / h (eps_f32 = 6e-8). The default h = 1e-2 keeps both near 1e-5
// to 1e-4 for the O(1..10) losses built here, so a difference is reported when
// |analytic - numeric| > atol + rtol * max(|analytic|, |numeric|) with atol = 2e-3,
// rtol = 2e-2: well above those errors, far below the error of a wrong rule
// (a wrong rule is typically off by O(1) relative).
#include <functional>
#include <string>
#include <vector>

#include "engine/ir/builder.h"
#include "engine/tensor/tensor.h"

namespace kiln::test {

struct GradCheckOptions {
  float step = 1e-2f;
  float atol = 2e-3f;
  float rtol = 2e-2f;
  int max_elements = 64;        // per input; sampled evenly when larger
  std::vector<size_t> constant;  // f32 inputs not to differentiate (e.g. masks)
  uint64_t seed = 1;
};

// Builds f(inputs) on a fresh graph whose inputs hold `values`; reduces its
// results to a scalar loss, the sum over results of sum(f_i * R_i) with fixed
// random R_i (a scalar result enters as itself when it is the only one); checks
// the gradient with respect to every f32 input against central differences.
// Reports failures through doctest CHECKs naming the input and element.
void check_gradients(const std::function<std::vector<Value>(Builder&, const std::vector<Value>&)>& f,
                     const std::vector<Tensor>& values, const GradCheckOptions& opts = {});
// The same for a function with one result.
void check_gradients(const std::function<Value(Builder&, const std::vector<Value>&)>& f,
                     const std::vector<Tensor>& values, const GradCheckOptions& opts = {});

// A tensor of the given shape with values uniform in [lo, hi), from `seed`.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace kiln::test
