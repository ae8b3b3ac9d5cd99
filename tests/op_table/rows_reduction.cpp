// Rows of sum, mean and max over axes (ops/reduction.cpp).
//
// Forward tolerances: max picks elements and i32 sums wrap alike, so they are
// exact. f32 sums accumulate in f32 in the JIT (double in the reference): abs
// 1e-4 + rel 1e-5 on values within [-4, 4] summed over up to two million
// elements (the large samples), far below the error of a wrong index.
#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

constexpr Tolerance kSum{1e-4, 1e-5};

using Axes = std::vector<int64_t>;

// Every subset of the axes of a few shapes (scalars, size-1 dims, sizes off the
// vector widths), named from either end, keepdims either way, the dtype drawn
// from `dtypes`; zero-size axes (reduced where `empty_axes` allows); two large
// reductions that threads split; and edge values.
SampleFn reduction_samples(std::vector<DType> dtypes, Values values, bool empty_axes) {
  return [=](Rng& rng) {
    std::vector<Sample> out;
    for (const Shape& s : std::vector<Shape>{{}, {1}, {17}, {40}, {3, 33}, {33, 3}, {16, 1}, {2, 5, 17}, {7, 1, 16, 3}}) {
      const auto rank = static_cast<int64_t>(s.size());
      for (int64_t mask = 0; mask < (int64_t{1} << rank); ++mask) {
        Axes axes;
        for (int64_t k = 0; k < rank; ++k)
          if (mask >> k & 1) axes.push_back(rng.coin() ? k : k - rank);
        out.push_back({{random_tensor(rng, {rng.pick(dtypes), s}, values)}, {{"axes", axes}, {"keepdims", rng.coin()}}});
      }
    }
    out.push_back({{random_tensor(rng, {dtypes[0], {3, 0}})}, {{"axes", Axes{0}}}, "size 0"});
    if (empty_axes)
      for (const auto& [s, axis] : std::vector<std::pair<Shape, int64_t>>{{{0, 3}, 0}, {{3, 0}, 1}})
        out.push_back({{random_tensor(rng, {dtypes[0], s})}, {{"axes", Axes{axis}}}, "size 0"});
    if (empty_axes) out.push_back({{random_tensor(rng, {dtypes[0], {0, 3}})}, {{"keepdims", true}}, "size 0, all axes"});
    out.push_back({{random_tensor(rng, {dtypes[0], {3000, 700}}, values)}, {{"axes", Axes{1}}}, "large"});
    out.push_back({{random_tensor(rng, {dtypes.back(), {700, 3000}}, values)}, {{"axes", Axes{0}}}, "large"});
    out.push_back({{random_tensor(rng, {dtypes[0], {64, 100, 50}}, values)}, {{"axes", Axes{0, 2}}}, "large"});
    // Infinities, nan, zeros and subnormals; no huge finite values, whose sums
    // overflow in the JIT's f32 and not in the reference's double.
    for (const Axes& axes : {Axes{}, Axes{1}, Axes{0}}) {
      Sample s{{random_tensor(rng, {DType::f32, {9, 17}})}, {{"axes", axes}}, "special values"};
      fill_special_values(rng, s.operands[0], /*huge=*/false);
      out.push_back(std::move(s));
    }
    return out;
  };
}

// Every kind of axes list: all (empty), one axis from either end, several,
// every axis named, a size-1 axis, a scalar; keepdims both ways.
SampleFn reduction_grad(std::function<Tensor(Rng&, const Shape&)> make) {
  return [make](Rng& rng) {
    const std::vector<std::pair<Shape, Axes>> cases = {{{2, 3, 4}, {}},  {{2, 3, 4}, {0}},    {{2, 3, 4}, {1}},
                                                       {{2, 3, 4}, {-1}}, {{2, 3, 4}, {0, 2}}, {{2, 3, 4}, {0, 1, 2}},
                                                       {{2, 1, 3}, {1}},  {{5}, {0}},          {{}, {}}};
    std::vector<Sample> out;
    for (const auto& [s, axes] : cases)
      for (bool keepdims : {false, true}) out.push_back({{make(rng, s)}, {{"axes", axes}, {"keepdims", keepdims}}});
    return out;
  };
}

const std::vector<Signature> kBadAxes = {{{{DType::f32, {2, 3}}}, {{"axes", Axes{2}}}},
                                         {{{DType::f32, {2, 3}}}, {{"axes", Axes{-3}}}},
                                         {{{DType::f32, {2, 3}}}, {{"axes", Axes{0, 0}}}}};

OpInfo reduction(std::string name, std::vector<DType> dtypes, Tolerance tol, Values values, bool empty_axes,
                 std::function<Tensor(Rng&, const Shape&)> grad_values) {
  std::vector<Signature> invalid = kBadAxes;
  if (!empty_axes) invalid.push_back({{{DType::f32, {0, 3}}}, {{"axes", Axes{0}}}});  // no identity
  return {.name = std::move(name),
          .dtypes = {dtypes},
          .samples = reduction_samples(dtypes, values, empty_axes),
          .tolerance = tol,
          .grad_samples = reduction_grad(std::move(grad_values)),
          .invalid = std::move(invalid)};
}

}  // namespace

std::vector<OpInfo> reduction_rows() {
  const auto any = [](Rng& rng, const Shape& s) { return uniform(rng, s); };
  return {reduction("sum", {DType::f32, DType::i32}, kSum, Values::moderate, true, any),
          reduction("mean", {DType::f32}, kSum, Values::moderate, true, any),
          reduction("max", {DType::f32, DType::i32}, kExact, Values::any, false, distinct_values)};
}

}  // namespace kiln::test
