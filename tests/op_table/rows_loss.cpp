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

#include "ops/op_test_util.h"
#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

constexpr Tolerance kLoss{1e-5, 1e-5};
// linear_cross_entropy: the logits are the GEMM's f32 sums of D <= 64 products of
// values within [-2, 2] (|x| <= 256, an error of about D * 4 * 2^-24 ~ 2e-5 at
// most), against the reference's double sums rounded once; the row's loss and
// log-sum-exp carry that absolute error on top of cross_entropy's.
constexpr Tolerance kLinearLoss{1e-4, 1e-4};
// Its gradient sums V terms of G (each about 1/V of a row's weight) times w or
// h in one f32 chain per element (gemm.h): up to V * 2^-24 relative to the sum
// of the terms' sizes, which for V = 140000 is 1e-2 of |dloss| * 2 / count in
// the worst case and about sqrt(V) * 2^-24 in practice.
constexpr Tolerance kLinearLossBackward{2e-4, 2e-3};

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

// linear_cross_entropy's operands: h [N, D] and w [V, D] within [-2, 2], labels.
Sample linear_sample(Rng& rng, int64_t n, int64_t d, int64_t v, double smoothing, int64_t ignore_index,
                     double p_ignored, std::string note = "") {
  return {{uniform(rng, {n, d}, -2.0f, 2.0f), uniform(rng, {v, d}, -2.0f, 2.0f),
           random_labels(rng, {n}, v, ignore_index, p_ignored)},
          {{"smoothing", smoothing}, {"ignore_index", ignore_index}},
          std::move(note)};
}

// Sizes off the vector widths and the GEMM's register tile (one row, one class
// too), every smoothing and ignore_index variant, rows all ignored; and rows in
// a block and a tail of one row (V large enough that a block holds its fewest
// rows, 256: linear_loss_emitters.cpp), which threads split.
std::vector<Sample> linear_samples(Rng& rng) {
  std::vector<Sample> out;
  for (int i = 0; i < 12; ++i) {
    const int64_t v = rng.pick(std::vector<int64_t>{1, 2, 17, 33, 100, 300});
    const int64_t ignore_index = rng.coin() ? -100 : rng.uniform(0, v - 1);
    out.push_back(linear_sample(rng, rng.pick(std::vector<int64_t>{1, 3, 15, 40, 100}),
                                rng.pick(std::vector<int64_t>{1, 5, 16, 33}), v,
                                rng.pick(std::vector<double>{0.0, 0.1, 1.0}), ignore_index, i % 4 == 0 ? 1.0 : 0.2));
  }
  out.push_back(linear_sample(rng, 0, 4, 7, 0.1, -100, 0.0, "size 0"));
  out.push_back(linear_sample(rng, 257, 2, 140000, 0.1, -100, 0.1, "blocks of rows and a tail"));
  out.push_back(linear_sample(rng, 600, 64, 1000, 0.1, -100, 0.1, "large"));
  return out;
}

// The forward's operands, its lse from the reference, and a random dloss.
std::vector<Sample> linear_backward_samples(Rng& rng) {
  std::vector<Sample> out;
  for (Sample& s : linear_samples(rng)) {
    const std::vector<Tensor> loss_lse = run_op("linear_cross_entropy", s.operands, s.attrs);
    s.operands.push_back(loss_lse[1]);
    s.operands.push_back(uniform(rng, {}, 0.5f, 2.0f));
    out.push_back(std::move(s));
  }
  return out;
}

// The forward's operands and a random dloss.
std::vector<Sample> linear_train_samples(Rng& rng) {
  std::vector<Sample> out = linear_samples(rng);
  for (Sample& s : out) s.operands.push_back(uniform(rng, {}, 0.5f, 2.0f));
  return out;
}

// Without and with smoothing, ignored rows (a valid class as ignore_index too),
// one class, one row.
std::vector<Sample> linear_grad_samples(Rng& rng) {
  using I = Tensor::I32;
  struct Case {
    int64_t d, v;
    I labels;
    double smoothing;
    int64_t ignore_index = -100;
  };
  const std::vector<Case> cases = {{3, 5, I{0, 3, 4, 3}, 0.0},       {3, 5, I{0, 3, 4, 3}, 0.1},
                                   {2, 4, I{1, 2, 0}, 1.0},          {4, 5, I{0, -100, 4, -100}, 0.1},
                                   {2, 4, I{2, 0, 2}, 0.0, 2},       {3, 1, I{0, 0}, 0.0},
                                   {5, 6, I{3}, 0.1}};
  std::vector<Sample> out;
  for (const Case& c : cases) {
    const auto n = static_cast<int64_t>(c.labels.size());
    out.push_back({{uniform(rng, {n, c.d}), uniform(rng, {c.v, c.d}), Tensor(c.labels)},
                   {{"smoothing", c.smoothing}, {"ignore_index", c.ignore_index}}});
  }
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
                       {{{DType::f32, {4, 3}}, {DType::i32, {4}}}, {{"smoothing", 1.5}}}}},
          {.name = "linear_cross_entropy",
           .dtypes = {{DType::f32}, {DType::f32}, {DType::i32}},
           .samples = linear_samples,
           .tolerance = kLinearLoss,
           .no_fusion = "one kernel of its own: it reads h and w as the GEMM packs them",
           .grad_samples = linear_grad_samples,
           .grad_results = {0},  // lse has no gradient rule: it feeds only the backward op
           .no_grad_of_grad = "its gradient is linear_cross_entropy_backward, which has no rule: it recomputes "
                              "the logits and keeps no [N, V] tensor, so nothing differentiates through it",
           .invalid = {{{{DType::f32, {4, 3}}, {DType::f32, {5, 2}}, {DType::i32, {4}}}},
                       {{{DType::f32, {4, 3}}, {DType::f32, {5, 3}}, {DType::i32, {5}}}},
                       {{{DType::f32, {4}}, {DType::f32, {5, 4}}, {DType::i32, {4}}}},
                       {{{DType::f32, {4, 3}}, {DType::f32, {0, 3}}, {DType::i32, {4}}}},
                       {{{DType::f32, {4, 3}}, {DType::f32, {5, 3}}, {DType::i32, {4}}}, {{"smoothing", -0.5}}}}},
          {.name = "linear_cross_entropy_backward",
           .dtypes = {{DType::f32}, {DType::f32}, {DType::i32}, {DType::f32}, {DType::f32}},
           .samples = linear_backward_samples,
           .tolerance = kLinearLossBackward,
           .no_fusion = "one kernel of its own: it reads h and w as the GEMM packs them",
           .no_gradient = "the backward op of linear_cross_entropy: its logits are recomputed, nothing is kept to "
                          "differentiate it again",
           .invalid = {{{{DType::f32, {4, 3}}, {DType::f32, {5, 3}}, {DType::i32, {4}}, {DType::f32, {5}},
                         {DType::f32, {}}}},
                       {{{DType::f32, {4, 3}}, {DType::f32, {5, 3}}, {DType::i32, {4}}, {DType::f32, {4}},
                         {DType::f32, {1}}}}}},
          {.name = "linear_cross_entropy_train",
           .dtypes = {{DType::f32}, {DType::f32}, {DType::i32}, {DType::f32}},
           .samples = linear_train_samples,
           .tolerance = kLinearLossBackward,
           .no_fusion = "one kernel of its own: it reads h and w as the GEMM packs them",
           .no_gradient = "linear_cross_entropy and its backward in one, made by a pass after autodiff: its "
                          "gradients are its results",
           .invalid = {{{{DType::f32, {4, 3}}, {DType::f32, {5, 2}}, {DType::i32, {4}}, {DType::f32, {}}}},
                       {{{DType::f32, {4, 3}}, {DType::f32, {5, 3}}, {DType::i32, {4}}, {DType::f32, {2}}}}}}};
}

}  // namespace kiln::test
