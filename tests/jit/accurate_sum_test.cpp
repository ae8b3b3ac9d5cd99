// Large sums stay accurate (issue 21): every f32 sum the JIT computes is blocked
// (compiler/codegen/blocked_sum.h), which bounds its error for n <= 2^36 terms by
//
//   |result - sum x_i| <= 2^-24 |sum x_i| + 2^-16 sum |x_i|
//
// Before, a vector lane stopped growing at 2^24 times its terms: a sum of
// 2^29 terms came out 4 times too small. The big cases fuse constants into the
// reduction, so nothing is materialized and 2^29 terms take a fraction of a
// second; their float64 sums are known in closed form. Past 2^24 terms per
// lane means past 2^28 per line at 16 lanes (AVX-512).
#include <doctest/doctest.h>

#include <cmath>

#include "compiler/jit_executable.h"
#include "differential.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/normalization.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// The stated bound on a sum's error, given its value and the sum of its terms' |x|.
double sum_bound(double sum, double sum_abs) { return std::ldexp(std::fabs(sum), -24) + std::ldexp(sum_abs, -16); }

std::vector<double> values(const Tensor& t) {
  return std::vector<double>(t.f32().data(), t.f32().data() + t.numel());
}

}  // namespace

TEST_CASE("sums of 2^27 to 2^29 terms, rows, columns and all axes, are within the bound of their float64 sums") {
  Graph g("big_sums");
  Builder b(g);
  // Every axis: 0..32767 along rows of 2^15, 2^14 rows; the sum is 2^28 (2^15 - 1).
  const Value ramp = ops::iota(b, {1 << 14, 1 << 15}, 1, DType::f32);
  b.output(ops::sum(b, ramp, {0, 1}));
  b.output(ops::mean(b, ramp, {0, 1}));
  // Rows of 2^29 terms: r + c in row r, c = 0.5 for the sum and 1.5 for the mean
  // (one value for both would be computed once and stored: 4 GB).
  const auto rows = [&](double c) {
    return ops::add(b, ops::iota(b, {2, 1 << 29}, 0, DType::f32), ops::fill(b, {}, c));
  };
  b.output(ops::sum(b, rows(0.5), {1}));
  b.output(ops::mean(b, rows(1.5), {1}, true));
  // Columns of 2^27 terms: 0 in column 0, 1 in column 1.
  b.output(ops::sum(b, ops::iota(b, {1 << 27, 2}, 1, DType::f32), {0}));
  // A cross-entropy row of 2^29 equal logits: the loss is log(2^29).
  b.output(ops::cross_entropy(b, ops::fill(b, {1, 1 << 29}, 0.0), ops::fill(b, {1}, 0.0, DType::i32)));

  compiler::JitExecutable jit(g);
  jit.run();
  const std::vector<std::string> names = jit.output_names();
  const double all = std::ldexp(32767.0, 28);
  const struct {
    std::vector<double> exact;  // the float64 sums (closed forms), or means
    double bound;               // the stated bound for the largest of them
  } expected[] = {
      {{all}, sum_bound(all, all)},
      {{32767.0 / 2}, sum_bound(all, all) / std::ldexp(1.0, 29)},
      {{std::ldexp(1.0, 28), std::ldexp(3.0, 28)}, sum_bound(std::ldexp(3.0, 28), std::ldexp(3.0, 28))},
      {{1.5, 2.5}, sum_bound(2.5, 2.5)},
      {{0.0, std::ldexp(1.0, 27)}, sum_bound(std::ldexp(1.0, 27), std::ldexp(1.0, 27))},
  };
  for (size_t i = 0; i < std::size(expected); ++i) {
    const std::vector<double> got = values(jit.output(names[i]));
    REQUIRE(got.size() == expected[i].exact.size());
    for (size_t j = 0; j < got.size(); ++j) {
      INFO("output %" << names[i] << " element " << j << ": " << got[j] << ", float64 " << expected[i].exact[j]);
      CHECK(std::fabs(got[j] - expected[i].exact[j]) <= expected[i].bound);
    }
  }
  // log of a sum within the bound: off by at most 2^-16 relative, plus the log's own rounding.
  const double loss = values(jit.output(names[5]))[0];
  CHECK(std::fabs(loss - 29 * std::log(2.0)) <= std::ldexp(1.0, -16) + 1e-6);
}

TEST_CASE("random sums with cancellation, over blocks and remainders, are within the bound, per result") {
  // Rows of 100,003 terms (blocks of every lane count plus a remainder), columns
  // of 40,003: x and |x| summed alike, so each result's bound is known.
  for (const auto& [shape, axis] : {std::pair{Shape{3, 100003}, int64_t{1}}, std::pair{Shape{40003, 5}, int64_t{0}}}) {
    CAPTURE(shape_str(shape));
    Graph g("random_sums");
    Builder b(g);
    const Value x = b.input("x", {DType::f32, shape});
    b.output(ops::sum(b, x, {axis}));
    b.output(ops::sum(b, ops::maximum(b, x, ops::neg(b, x)), {axis}));
    Rng rng(21);
    const Tensor data = random_tensor(rng, g.type(x), Values::any);
    Interpreter interp(g);  // sums in double
    compiler::JitExecutable jit(g);
    interp.bind("x", data);
    jit.bind("x", data);
    interp.run();
    jit.run();
    const std::vector<std::string> names = interp.output_names();
    const std::vector<double> exact = values(interp.output(names[0])), sum_abs = values(interp.output(names[1]));
    const std::vector<double> got = values(jit.output(names[0]));
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("result " << i << ": " << got[i] << ", float64 " << exact[i] << ", sum of |x| " << sum_abs[i]);
      // The interpreter's result is the float64 sum rounded to f32: half an ulp more room.
      CHECK(std::fabs(got[i] - exact[i]) <= sum_bound(exact[i], sum_abs[i]) + std::ldexp(std::fabs(exact[i]), -24));
    }
  }
}

TEST_CASE("a long row with one large logit: softmax, log_softmax and cross_entropy, interpreter and JIT") {
  // exp(0) = 1 next to 2^20 terms of exp(-24 ln 2) = 2^-24: an f32 accumulator
  // holding the 1 drops every one of them (the interpreter's softmax was 1.0,
  // 6% off; the JIT's lane holding the 1 lost 2^17 of them).
  constexpr int64_t kSmall = 1 << 20;
  Graph g("long_row");
  Builder b(g);
  const Value first = ops::equal(b, ops::iota(b, {1, kSmall + 1}, 1), ops::fill(b, {}, 0, DType::i32));
  const Value x = ops::select(b, first, ops::fill(b, {}, 24 * std::log(2.0)), ops::fill(b, {}, 0.0));
  const auto first_two = [&](Value v) { return ops::slice(b, v, {1}, {0}, {2}); };
  b.output(first_two(ops::softmax(b, x)));
  b.output(first_two(ops::log_softmax(b, x)));
  b.output(ops::cross_entropy(b, x, ops::fill(b, {1}, 0.0, DType::i32)));
  const double total = 1 + std::ldexp(static_cast<double>(kSmall), -24);  // the row's float64 sum of exps
  const std::vector<double> exact[] = {{1 / total, std::ldexp(1.0, -24) / total},
                                       {-std::log(total), -24 * std::log(2.0) - std::log(total)},
                                       {std::log(total)}};
  const bool is_log[] = {false, true, true};
  Interpreter interp(g);
  compiler::JitExecutable jit(g);
  interp.run();
  jit.run();
  const std::vector<std::string> names = interp.output_names();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::vector<double> reference = values(interp.output(names[i])), compiled = values(jit.output(names[i]));
    for (size_t j = 0; j < exact[i].size(); ++j) {
      INFO("output %" << names[i] << " element " << j << ": interpreter " << reference[j] << ", jit " << compiled[j]
                      << ", float64 " << exact[i][j]);
      // The interpreter sums in double: only f32 rounding of exp and the results.
      CHECK(std::fabs(reference[j] - exact[i][j]) <= 1e-6 * std::fabs(exact[i][j]) + 1e-7);
      // The JIT's sum is within 2^-16 of its own size (all terms positive): the
      // division carries that into the result relative to it, the log as an
      // absolute error; plus its fast exp and log.
      const double sum_error = std::ldexp(1.0, -16) * (is_log[i] ? 1.0 : std::fabs(exact[i][j]));
      CHECK(std::fabs(compiled[j] - exact[i][j]) <= sum_error + 1e-6 * std::fabs(exact[i][j]) + 2e-6);
    }
  }
}
