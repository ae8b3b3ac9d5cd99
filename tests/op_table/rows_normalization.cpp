// Rows of softmax, log_softmax and layer_norm (ops/normalization.cpp).
//
// Forward tolerances (abs + rel * |expected|), from how the two sides compute:
//  * softmax {1e-6, 1e-5}: exp within 1.5 ulp on either side (fast_math.h; std's
//    within 1), and the sum of exp added in another order (W lanes, then a tree):
//    a sum of n positive floats is off by at most about n * 2^-24 relative, in
//    practice sqrt(n) * 2^-24; the lines here have n <= 1000 (measured: 6e-7).
//    abs covers results in the subnormals, where an ulp is large relative to them.
//  * log_softmax {2e-5, 1e-6}: x - max is exact on both sides; log(sum) carries the
//    sum's relative error as an absolute one (d log s = ds / s); rel covers the
//    last rounding of x - max - log(sum) at |x| up to 1e3 (measured: 1 ulp).
//  * layer_norm {1e-5, 1e-5}: the reference accumulates in double, the JIT in f32
//    with a corrected two-pass mean and variance (normalization_emitters.cpp), so
//    the normalized values are within a few ulp; results reach |gamma| * sqrt(D)
//    + |beta| ~ 30 here (|gamma|, |beta| <= 4), where 1e-5 is 5 ulp (measured: 4e-6).
//    Its mean result: the JIT's is the f32 mean m it subtracts plus the mean of the
//    f32 differences x * s - m, so its error scales with the row's largest |x|, not
//    with the mean: within 2.5e-7 * max |x|, 4 ulp of it (measured: 4.3e-8). Its
//    rstd result {0, 1e-6}: rstd carries half the variance's relative error, which
//    the f32 sums of squares keep to a few ulp (measured: 1.9e-7).
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

constexpr Tolerance kSoftmax{1e-6, 1e-5};
constexpr Tolerance kLogSoftmax{2e-5, 1e-6};
constexpr Tolerance kLayerNorm{1e-5, 1e-5};
constexpr double kLayerNormMean = 2.5e-7;  // times the row's largest |x|
constexpr Tolerance kLayerNormRstd{0, 1e-6};
constexpr float kInf = std::numeric_limits<float>::infinity();

Shape nonscalar_shape(Rng& rng, int max_rank) {
  Shape s = random_shape(rng, max_rank);
  if (s.empty()) s.push_back(rng.pick(std::vector<int64_t>{1, 17, 33}));
  return s;
}

Attrs random_axis(Rng& rng, const Shape& s) {
  const auto rank = static_cast<int64_t>(s.size());
  return {{"axis", rng.uniform(-rank, rank - 1)}};
}

// Random shapes and axes; -inf entries; whole lines of -inf (0 and -inf
// results) next to lines with one finite entry; large lines that threads
// split; size 0; the edges of f32.
std::vector<Sample> softmax_samples(Rng& rng) {
  std::vector<Sample> out;
  for (int i = 0; i < 16; ++i) {
    const Shape s = nonscalar_shape(rng, 4);
    out.push_back({{random_tensor(rng, {DType::f32, s})}, random_axis(rng, s)});
  }
  for (int i = 0; i < 6; ++i) {
    const Shape s = nonscalar_shape(rng, 3);
    Sample sample{{random_tensor(rng, {DType::f32, s})}, random_axis(rng, s), "masked entries"};
    for (float& v : sample.operands[0].f32())
      if (rng.coin(0.3)) v = -kInf;
    out.push_back(std::move(sample));
  }
  for (int64_t axis : {0, 1}) {
    Sample sample{{random_tensor(rng, {DType::f32, {5, 19}})}, {{"axis", axis}}, "fully masked line"};
    Tensor::F32& x = sample.operands[0].f32();
    for (size_t k = 0; k < x.shape(static_cast<size_t>(axis)); ++k) {
      (axis == 1 ? x(2, k) : x(k, 2)) = -kInf;                  // line 2 fully masked
      (axis == 1 ? x(3, k) : x(k, 3)) = k == 1 ? 7.0f : -kInf;  // line 3: one entry left
    }
    out.push_back(std::move(sample));
  }
  out.push_back({{random_tensor(rng, {DType::f32, {300, 1000}})}, {{"axis", int64_t{-1}}}, "large"});
  out.push_back({{random_tensor(rng, {DType::f32, {60, 40, 70}})}, {{"axis", int64_t{1}}}, "large"});
  out.push_back({{random_tensor(rng, {DType::f32, {0, 5}})}, {{"axis", int64_t{1}}}, "size 0"});
  out.push_back({{random_tensor(rng, {DType::f32, {3, 0}})}, {{"axis", int64_t{1}}}, "size 0"});
  for (int i = 0; i < 8; ++i) {
    const Shape s{rng.pick(std::vector<int64_t>{1, 4, 9}), rng.pick(std::vector<int64_t>{1, 2, 3, 17, 40})};
    Sample sample{{random_tensor(rng, {DType::f32, s})}, {{"axis", rng.uniform(-2, 1)}}, "special values"};
    fill_special_values(rng, sample.operands[0]);
    out.push_back(std::move(sample));
  }
  return out;
}

// Every kind of axis: the only one, the last, the first, a middle one, size 1.
std::vector<Sample> softmax_grad_samples(Rng& rng) {
  const std::vector<std::pair<Shape, int64_t>> cases = {{{5}, -1},      {{5}, 0},        {{2, 3}, -1}, {{2, 3}, 0},
                                                        {{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{1, 4}, 0}};
  std::vector<Sample> out;
  for (const auto& [s, axis] : cases) out.push_back({{uniform(rng, s, -2.0f, 2.0f)}, {{"axis", axis}}});
  return out;
}

const std::vector<Signature> kSoftmaxInvalid = {{{{DType::f32, {2, 3}}}, {{"axis", int64_t{2}}}},
                                                {{{DType::f32, {2, 3}}}, {{"axis", int64_t{-3}}}},
                                                {{{DType::f32, {}}}, {{"axis", int64_t{0}}}}};

OpInfo softmax_row(std::string name, Tolerance tol) {
  return {.name = std::move(name),
          .dtypes = {{DType::f32}},
          .samples = softmax_samples,
          .tolerance = tol,
          .grad_samples = softmax_grad_samples,
          .invalid = kSoftmaxInvalid};
}

// x, gamma and beta with x's last dim; gamma and beta within [-4, 4].
Sample layer_norm_sample(Rng& rng, const Shape& s, double eps, std::string note = "") {
  const TensorType param{DType::f32, {s.back()}};
  return {{random_tensor(rng, {DType::f32, s}), random_tensor(rng, param, Values::moderate),
           random_tensor(rng, param, Values::moderate)},
          {{"eps", eps}},
          std::move(note)};
}

// Random shapes and eps (constant rows, variance 0, among them), a large
// sample, size 0, and edges of f32 with eps down to the smallest double.
std::vector<Sample> layer_norm_samples(Rng& rng) {
  std::vector<Sample> out;
  for (double eps : {1e-5, 1e-2, 1.0})
    for (int i = 0; i < 5; ++i) {
      out.push_back(layer_norm_sample(rng, nonscalar_shape(rng, 3), eps));
      if (i == 0) out.back().operands[0].f32().fill(0.1f);  // constant rows: variance 0
    }
  out.push_back(layer_norm_sample(rng, {513, 257}, 1e-5, "large"));
  out.push_back(layer_norm_sample(rng, {0, 7}, 1e-5, "size 0"));
  for (int i = 0; i < 8; ++i) {
    const Shape s{rng.pick(std::vector<int64_t>{1, 4, 9}), rng.pick(std::vector<int64_t>{1, 2, 3, 17, 40})};
    Sample sample = layer_norm_sample(rng, s, rng.pick(std::vector<double>{1e-5, 0.0, 5e-324, 1e-300}), "special values");
    fill_special_values(rng, sample.operands[0]);
    out.push_back(std::move(sample));
  }
  return out;
}

// y within kLayerNorm, rstd within kLayerNormRstd, and each row's mean within
// kLayerNormMean times its largest |x|.
std::string compare_layer_norm(const Sample& s, size_t result, const Tensor& expected, const Tensor& actual) {
  if (result == 0) return compare_tensors(expected, actual, kLayerNorm);
  if (result == 2) return compare_tensors(expected, actual, kLayerNormRstd);
  const Tensor::F32& x = s.operands[0].f32();
  const size_t d = x.shape().back();
  for (size_t row = 0; row < static_cast<size_t>(expected.numel()); ++row) {
    float max_abs = 0;
    for (size_t k = 0; k < d; ++k) max_abs = std::max(max_abs, std::fabs(x.data()[row * d + k]));
    const float e = expected.f32().data()[row], a = actual.f32().data()[row];
    if ((std::isnan(e) && std::isnan(a)) || e == a || std::fabs(static_cast<double>(e) - a) <= kLayerNormMean * max_abs)
      continue;
    std::ostringstream os;
    os << "mean of row " << row << ": expected " << e << ", got " << a << ", max |x| " << max_abs;
    return os.str();
  }
  return "";
}

// x within [-2, 2], gamma within [0.5, 1.5] (away from 0, where x's gradient
// vanishes), beta within [-1, 1]; eps small and large.
std::vector<Sample> layer_norm_grad_samples(Rng& rng) {
  std::vector<Sample> out;
  for (const Shape& s : std::vector<Shape>{{5}, {2, 5}, {2, 3, 4}})
    for (double eps : {1e-5, 0.1}) {
      const Shape param{s.back()};
      out.push_back({{uniform(rng, s, -2.0f, 2.0f), uniform(rng, param, 0.5f, 1.5f), uniform(rng, param)}, {{"eps", eps}}});
    }
  return out;
}

OpInfo layer_norm_row() {
  return {.name = "layer_norm",
          .dtypes = {{DType::f32}, {DType::f32}, {DType::f32}},
          .samples = layer_norm_samples,
          .compare = compare_layer_norm,
          .grad_samples = layer_norm_grad_samples,
          .invalid = {{{{DType::f32, {2, 3}}, {DType::f32, {2}}, {DType::f32, {3}}}},
                      {{{DType::f32, {2, 3}}, {DType::f32, {3}}, {DType::f32, {2, 3}}}},
                      {{{DType::f32, {}}, {DType::f32, {1}}, {DType::f32, {1}}}}}};
}

}  // namespace

std::vector<OpInfo> normalization_rows() {
  return {softmax_row("softmax", kSoftmax), softmax_row("log_softmax", kLogSoftmax), layer_norm_row()};
}

}  // namespace kiln::test
