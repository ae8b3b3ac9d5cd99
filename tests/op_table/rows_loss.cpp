// The row of cross_entropy (ops/loss.cpp).
//
// Forward tolerance {1e-5, 1e-5}: the JIT's per-row log-sum-exp uses fast exp and
// log (within 1.5 and 1 ulp, fast_math.h) and adds the exp in another order; a
// row's log-probabilities then carry about n * 2^-24 relative error of the sum as
// an absolute error (n <= 1000 here). The rows' losses are combined in double on
// both sides, so the mean keeps that error, relative to losses of order 1 to 10
// and up to 1e3 where logits reach 1e3 (measured: 9e-7 relative at most).
// Hand-computed losses and labels out of range are in tests/jit/loss_test.cpp.
#include <limits>

#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

constexpr Tolerance kLoss{1e-5, 1e-5};

// Labels in [0, classes), with probability p_ignored ignore_index instead.
Tensor random_labels(Rng& rng, const Shape& positions, int64_t classes, int64_t ignore_index, double p_ignored) {
  Tensor labels = Tensor::zeros({DType::i32, positions});
  for (int32_t& l : labels.i32())
    l = static_cast<int32_t>(rng.coin(p_ignored) ? ignore_index : rng.uniform(0, classes - 1));
  return labels;
}

Sample loss_sample(Rng& rng, const Shape& logits, double smoothing, int64_t ignore_index, double p_ignored,
                   std::string note = "") {
  const Shape positions(logits.begin(), logits.end() - 1);
  return {{random_tensor(rng, {DType::f32, logits}),
           random_labels(rng, positions, logits.back(), ignore_index, p_ignored)},
          {{"smoothing", smoothing}, {"ignore_index", ignore_index}},
          std::move(note)};
}

// Classes off the vector widths (one class too), rank 1 to 4, every smoothing
// and ignore_index variant, rows all ignored; masked -inf logits (a -inf logit
// off the label: probability 0, so without smoothing the reference still
// multiplies it by smoothing / V = 0, nan; with smoothing the loss is inf; at
// the label inf); the edges of f32; many rows that threads split.
std::vector<Sample> loss_samples(Rng& rng) {
  std::vector<Sample> out;
  for (int i = 0; i < 20; ++i) {
    Shape logits = random_shape(rng, 3);
    logits.push_back(rng.pick(std::vector<int64_t>{1, 2, 7, 15, 16, 17, 33, 100}));  // classes
    const int64_t ignore_index = rng.coin() ? -100 : rng.uniform(0, logits.back() - 1);
    out.push_back(loss_sample(rng, logits, rng.pick(std::vector<double>{0.0, 0.1, 1.0}), ignore_index,
                              i % 4 == 0 ? 1.0 : 0.2));
  }
  for (double smoothing : {0.0, 0.1})
    for (int i = 0; i < 3; ++i) {
      const Shape logits{rng.pick(std::vector<int64_t>{1, 5, 40}), rng.pick(std::vector<int64_t>{3, 17, 40})};
      Sample s = loss_sample(rng, logits, smoothing, -100, 0.0, "masked logits");
      for (float& v : s.operands[0].f32())
        if (rng.coin(0.05)) v = -std::numeric_limits<float>::infinity();
      out.push_back(std::move(s));
    }
  for (int i = 0; i < 8; ++i) {
    const Shape logits{rng.pick(std::vector<int64_t>{1, 3, 8}), rng.pick(std::vector<int64_t>{1, 2, 17, 40})};
    Sample s = loss_sample(rng, logits, rng.pick(std::vector<double>{0.0, 0.1}), -100, 0.2, "special values");
    fill_special_values(rng, s.operands[0]);
    out.push_back(std::move(s));
  }
  out.push_back(loss_sample(rng, {0, 5}, 0.1, -100, 0.0, "size 0"));
  out.push_back(loss_sample(rng, {2000, 300}, 0.1, -100, 0.1, "large"));
  out.push_back(loss_sample(rng, {50000, 3}, 0.1, -100, 0.1, "large"));
  return out;
}

// Without and with smoothing (1: all weight on the uniform target), ignored
// positions (a valid class as ignore_index too), one position (scalar labels),
// one class (a constant loss 0).
std::vector<Sample> loss_grad_samples(Rng& rng) {
  using I = Tensor::I32;
  struct Case {
    Shape logits;
    I labels;
    double smoothing;
    int64_t ignore_index = -100;
  };
  const std::vector<Case> cases = {{{4, 5}, I{0, 3, 4, 3}, 0.0},
                                   {{2, 3, 4}, I{{0, 1, 2}, {3, 3, 0}}, 0.0},
                                   {{6}, I(2), 0.0},
                                   {{3, 1}, I{0, 0, 0}, 0.0},
                                   {{4, 5}, I{0, 3, 4, 3}, 0.1},
                                   {{2, 3, 4}, I{{0, 1, 2}, {3, 3, 0}}, 0.1},
                                   {{3, 4}, I{1, 2, 0}, 1.0},
                                   {{4, 5}, I{0, -100, 4, -100}, 0.0},
                                   {{4, 5}, I{0, -100, 4, -100}, 0.1},
                                   {{2, 3, 4}, I{{1, 7, 2}, {7, 3, 0}}, 0.1, 7},
                                   {{3, 4}, I{2, 0, 2}, 0.0, 2}};
  std::vector<Sample> out;
  for (const Case& c : cases)
    out.push_back({{uniform(rng, c.logits, -2.0f, 2.0f), Tensor(c.labels)},
                   {{"smoothing", c.smoothing}, {"ignore_index", c.ignore_index}}});
  return out;
}

}  // namespace

std::vector<OpInfo> loss_rows() {
  return {{.name = "cross_entropy",
           .dtypes = {{DType::f32}, {DType::i32}},
           .samples = loss_samples,
           .tolerance = kLoss,
           .grad_samples = loss_grad_samples,
           .invalid = {{{{DType::f32, {4, 3}}, {DType::i32, {3}}}},
                       {{{DType::f32, {4, 3}}, {DType::i32, {4, 1}}}},
                       {{{DType::f32, {4, 0}}, {DType::i32, {4}}}},
                       {{{DType::f32, {4, 3}}, {DType::i32, {4}}}, {{"smoothing", 1.5}}}}}};
}

}  // namespace kiln::test
