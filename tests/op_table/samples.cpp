#include "samples.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kiln::test {

std::vector<Tensor> random_operands(Rng& rng, const std::vector<TensorType>& types, Values values) {
  std::vector<Tensor> out;
  for (const TensorType& t : types) out.push_back(random_tensor(rng, t, values));
  return out;
}

void fill_special_values(Rng& rng, Tensor& x, bool huge) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  std::vector<float> edges = {0.0f, -0.0f, 1e-40f, -1e-40f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                              1.5f, -0.3f, 20.0f,
                              // Halfway between two bf16 values: rounded to the even one (down, up).
                              1.00390625f, -1.01171875f};
  // Also where exp overflows (88.8) or turns subnormal (-104), cast to i32 saturates (2.5e9) and to bf16
  // rounds to inf (3.3963e38).
  if (huge)
    edges.insert(edges.end(), {3.4e38f, -3.4e38f, 1e20f, -1e20f, 88.8f, -104.0f, 100.0f, -100.0f, 2.5e9f, 3.3963e38f});
  Tensor::F32& v = x.f32();
  const size_t d = v.dimension() == 0 ? 1 : v.shape().back();
  for (size_t line = 0; line * d < v.size(); ++line) {
    const bool constant = rng.coin();
    const float c = rng.pick(edges);
    for (size_t k = 0; k < d; ++k) v.data()[line * d + k] = constant ? c : rng.pick(edges);
  }
}

Tensor uniform(Rng& rng, const Shape& shape, float lo, float hi) { return random_tensor(shape, rng.next(), lo, hi); }

Tensor away_from_zero(Rng& rng, const Shape& shape, float margin) {
  Tensor t = uniform(rng, shape);
  for (float& v : t.f32()) v = v >= 0 ? v + margin : v - margin;
  return t;
}

Tensor on_grid(Rng& rng, const Shape& shape, float offset) {
  Tensor t = uniform(rng, shape, -0.05f, 0.05f);
  for (float& v : t.f32()) v += 0.4f * static_cast<float>(rng.uniform(-3, 2)) + offset;
  return t;
}

Tensor distinct_values(Rng& rng, const Shape& shape) {
  Tensor t = Tensor::zeros({DType::f32, shape});
  std::vector<float> v(static_cast<size_t>(t.numel()));
  std::iota(v.begin(), v.end(), 0.0f);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(i) - 1))]);
  std::transform(v.begin(), v.end(), t.f32().begin(), [](float k) { return 0.1f * k - 1.0f; });
  return t;
}

Tensor random_indices(Rng& rng, const Shape& shape, int64_t dim) {
  Tensor t = Tensor::zeros({DType::i32, shape});
  const int64_t distinct = rng.coin() ? dim : std::min<int64_t>(dim, 3);
  for (int32_t& v : t.i32()) v = static_cast<int32_t>(rng.uniform(0, distinct - 1) * (dim / distinct));
  return t;
}

Shape concat_shapes(Shape batch, const Shape& last) {
  batch.insert(batch.end(), last.begin(), last.end());
  return batch;
}

}  // namespace kiln::test
