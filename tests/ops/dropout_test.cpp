#include <doctest/doctest.h>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "engine/tensor/philox.h"
#include "ops/dropout.h"
#include "ops/op_test_util.h"

using namespace kiln;
using kiln::test::build_error;
using kiln::test::check_equal;
using kiln::test::run_op1;
using F = Tensor::F32;
using I = Tensor::I32;

namespace {

Tensor dropout(const F& x, int32_t key, double rate, int64_t seed) {
  return run_op1("dropout", {x, I(key)}, {{"rate", rate}, {"seed", seed}});
}

// x[i] = i + 1, so no element is 0 before dropout.
F counting(size_t n) { return xt::arange<float>(1.0f, static_cast<float>(n) + 1.0f); }

size_t kept_count(const Tensor& y) {
  size_t kept = 0;
  for (float v : y.f32()) kept += v != 0.0f;
  return kept;
}

}  // namespace

TEST_CASE("dropout with rate 0 is the identity") {
  const F x = {1.5f, -2.0f, 3.25f};
  check_equal(dropout(x, 7, 0.0, 3), x);
}

TEST_CASE("dropout elements 0 to 3 with seed 0 and key 0 draw Philox's first known answer") {
  // philox4x32_10(counter 0, key 0) = (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8), about
  // (0.399, 0.881, 0.736, 0.606) * 2^32: with rate 0.6, elements 1, 2 and 3 are kept and 0 is
  // dropped; element 0 is kept at rate 0.39 (threshold 1675037246) and dropped at 0.4.
  const float scale = static_cast<float>(1.0 / 0.4);
  check_equal(dropout(F{1.0f, 2.0f, 3.0f, 4.0f}, 0, 0.6, 0), F{0.0f, 2.0f * scale, 3.0f * scale, 4.0f * scale});
  check_equal(dropout(F{5.0f}, 0, 0.39, 0), F{5.0f * static_cast<float>(1.0 / 0.61)});
  check_equal(dropout(F{5.0f}, 0, 0.4, 0), F{0.0f});
}

TEST_CASE("dropout's mask is the documented Philox scheme") {
  const F x = counting(64);
  const int64_t seed = 0x100000002;  // key words (2, 1)
  const Tensor y = dropout(x, 9, 0.5, seed);
  F want = xt::zeros<float>({64});
  for (size_t i = 0; i < 64; ++i)
    if (philox::dropout_keep(philox::dropout_key(seed), 9, i, 0x80000000u)) want(i) = x(i) * 2.0f;
  check_equal(y, want);
}

TEST_CASE("dropout: same seed and key give the same mask and another key or seed another mask") {
  const F x = counting(1000);
  const Tensor a = dropout(x, 3, 0.5, 11);
  check_equal(dropout(x, 3, 0.5, 11), a.f32());
  CHECK(dropout(x, 4, 0.5, 11).f32() != a.f32());
  CHECK(dropout(x, 3, 0.5, 12).f32() != a.f32());
}

TEST_CASE("dropout keeps about 1 - rate of 100k elements and scales them exactly") {
  const size_t n = 100000;
  const F x = counting(n);
  for (double rate : {0.1, 0.5}) {
    CAPTURE(rate);
    const Tensor y = dropout(x, 1, rate, 2024);
    // Binomial(n, 1 - rate): allow 6 standard deviations (the seed is fixed, so this never flakes).
    const double mean = static_cast<double>(n) * (1.0 - rate);
    const double sd = std::sqrt(static_cast<double>(n) * rate * (1.0 - rate));
    CHECK(std::fabs(static_cast<double>(kept_count(y)) - mean) < 6.0 * sd);
    const float scale = static_cast<float>(1.0 / (1.0 - rate));
    bool exact = true;
    for (size_t i = 0; i < n; ++i) exact = exact && (y.f32()(i) == 0.0f || y.f32()(i) == x(i) * scale);
    CHECK(exact);
  }
}

TEST_CASE("dropout inference errors") {
  const TensorType x = {DType::f32, {4}}, key = {DType::i32, {}};
  CHECK(build_error("dropout", {x, key}, {{"rate", 1.0}}) == "dropout(f32[4], i32[]): rate must be in [0, 1), got 1.0");
  CHECK(build_error("dropout", {x, key}, {{"rate", -0.5}}) ==
        "dropout(f32[4], i32[]): rate must be in [0, 1), got -0.5");
  CHECK(build_error("dropout", {x, key}) == "dropout(f32[4], i32[]): op 'dropout' requires attribute 'rate' (float)");
  CHECK(build_error("dropout", {x, {DType::i32, {1}}}, {{"rate", 0.1}}) ==
        "dropout(f32[4], i32[1]): key must have rank 0, got rank 1");
  CHECK(build_error("dropout", {x, {DType::f32, {}}}, {{"rate", 0.1}}) ==
        "dropout(f32[4], f32[]): key must be i32, got f32");
  CHECK(build_error("dropout", {{DType::i32, {4}}, key}, {{"rate", 0.1}}) ==
        "dropout(i32[4], i32[]): operand 0 must be f32, got i32");
}

TEST_CASE("dropout builder helper: the step input changes the mask between runs") {
  Graph g("drop");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {256}});
  const Value step = b.input("step", {DType::i32, {}});
  const Value y = ops::dropout(b, x, step, 0.25, 5);
  b.output(y);
  Interpreter interp(std::move(g));
  const std::string out = interp.graph().name_of(y);
  interp.bind("x", Tensor(counting(256)));
  interp.bind("step", Tensor(I(0)));
  interp.run();
  const F first = interp.output(out).f32();
  check_equal(first, dropout(counting(256), 0, 0.25, 5).f32());
  interp.bind("step", Tensor(I(1)));
  interp.run();
  CHECK(interp.output(out).f32() != first);
}

// A batch cut into parts by rows (data-parallel ranks, --update-freq) draws the
// whole batch's mask when each part names its first example.
TEST_CASE("dropout of a batch's parts, each keyed by its first example, is dropout of the whole batch") {
  const F whole = xt::reshape_view(counting(6 * 7), {6, 7});  // 7 elements per example: offsets not multiples of 4
  const Tensor all = dropout(whole, 5, 0.5, 3);
  for (size_t first : {0, 1, 2, 4, 5}) {
    CAPTURE(first);
    const size_t rows = first == 4 ? 2 : 1;
    const F part = xt::view(whole, xt::range(first, first + rows), xt::all());
    const Tensor y = run_op1("dropout", {part, I(5), I(static_cast<int32_t>(first))},
                             {{"rate", 0.5}, {"seed", int64_t{3}}, {"examples", static_cast<int64_t>(rows)}});
    check_equal(y, F(xt::view(all.f32(), xt::range(first, first + rows), xt::all())));
  }
}

TEST_CASE("dropout's first example needs an example count that divides x, and the count needs it") {
  CHECK(build_error("dropout", {{DType::f32, {3, 5}}, {DType::i32, {}}, {DType::i32, {}}},
                    {{"rate", 0.5}, {"examples", int64_t{2}}}) ==
        "dropout(f32[3,5], i32[], i32[]): examples must be >= 1 and divide x's 15 elements, got 2");
  CHECK(build_error("dropout", {{DType::f32, {3, 5}}, {DType::i32, {}}}, {{"rate", 0.5}, {"examples", int64_t{3}}}) ==
        "dropout(f32[3,5], i32[]): examples is the count of x's examples, for a first_example operand; without one "
        "it must be 0");
}
