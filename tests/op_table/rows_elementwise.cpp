// Rows of the elementwise ops (ops/elementwise.cpp): unary, binary with numpy
// broadcasting, comparisons, logic, select and cast.
//
// Forward tolerances: exact for everything IEEE defines exactly (arithmetic,
// sqrt, the comparisons, select, cast, pow through the same libm powf); exp, log
// and tanh within 3 ulp relative (3 * 2^-23): fast_math.h's bounds (<= 1.5 ulp)
// plus std::'s own error against the exact value, subnormal results absolutely;
// erf, a rational approximation, within 6e-7 relative.
#include <cmath>
#include <map>
#include <utility>

#include "expected.h"
#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

constexpr Tolerance kFastMath{1e-44, 3.6e-7};
constexpr Tolerance kErf{1e-44, 6e-7};
constexpr int kShapesPerDtype = 8;

const std::vector<DType> kNumeric = {DType::f32, DType::i32};
const std::vector<DType> kBool = {DType::boolean};

// n operand shapes: one random, the others broadcasting against it, the full
// shape at a random position; every third call all equal.
std::vector<Shape> broadcast_shapes(Rng& rng, size_t n, int i) {
  const Shape full = random_shape(rng);
  std::vector<Shape> shapes(n, full);
  if (i % 3 == 0) return shapes;
  for (size_t k = 1; k < n; ++k) shapes[k] = broadcast_partner(rng, full);
  std::swap(shapes[0], shapes[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(n) - 1))]);
  return shapes;
}

std::vector<TensorType> typed(const std::vector<DType>& dtypes, const std::vector<Shape>& shapes) {
  std::vector<TensorType> types;
  for (size_t k = 0; k < shapes.size(); ++k) types.push_back({dtypes[k], shapes[k]});
  return types;
}

// Random shapes and values for each dtype (`operand_dtypes` maps the sample's
// dtype to each operand's), size 0, a large sample that threads split, and for
// f32 the special values.
SampleFn samples_of(size_t arity, std::vector<DType> dtypes, Values values,
                    std::function<std::vector<DType>(DType)> operand_dtypes) {
  return [=](Rng& rng) {
    std::vector<Sample> out;
    for (DType t : dtypes) {
      const std::vector<DType> d = operand_dtypes(t);
      for (int i = 0; i < kShapesPerDtype; ++i)
        out.push_back({random_operands(rng, typed(d, broadcast_shapes(rng, arity, i)), values)});
      std::vector<Shape> empty(arity, {0});
      empty[0] = {3, 0};
      out.push_back({random_operands(rng, typed(d, empty), values), {}, "size 0"});
    }
    const std::vector<DType> d = operand_dtypes(dtypes[0]);
    out.push_back({random_operands(rng, typed(d, std::vector<Shape>(arity, {257, 129})), values), {}, "large"});
    if (dtypes[0] == DType::f32)
      for (int i = 0; i < 2; ++i) {
        std::vector<Shape> shapes(arity, {9, 17});
        if (arity > 1) shapes[1] = {17};
        Sample s{random_operands(rng, typed(d, shapes), values), {}, "special values"};
        for (Tensor& x : s.operands)
          if (x.dtype() == DType::f32) fill_special_values(rng, x);
        out.push_back(std::move(s));
      }
    return out;
  };
}

SampleFn same_dtype_samples(size_t arity, std::vector<DType> dtypes, Values values = Values::any) {
  return samples_of(arity, std::move(dtypes), values, [arity](DType t) { return std::vector<DType>(arity, t); });
}

const std::vector<Shape> kGradShapes = {{}, {5}, {2, 3}, {2, 1, 4}};

// Operand shape pairs: equal, rank mismatch either way, size-1 dims on both
// sides, scalars, and both at once.
const std::vector<std::pair<Shape, Shape>> kBroadcastPairs = {
    {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{3}, {2, 3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{2, 3}, {}}, {{4, 1, 3}, {2, 1}}};

using MakeValues = std::function<Tensor(Rng&, const Shape&)>;

MakeValues in_range(float lo, float hi) {
  return [lo, hi](Rng& rng, const Shape& s) { return uniform(rng, s, lo, hi); };
}

SampleFn unary_grad(MakeValues make) {
  return [make](Rng& rng) {
    std::vector<Sample> out;
    for (const Shape& s : kGradShapes) out.push_back({{make(rng, s)}});
    return out;
  };
}

SampleFn binary_grad(MakeValues make_x, MakeValues make_y) {
  return [=](Rng& rng) {
    std::vector<Sample> out;
    for (const auto& [sx, sy] : kBroadcastPairs) out.push_back({{make_x(rng, sx), make_y(rng, sy)}});
    return out;
  };
}

const char* kAnyShape = "every shape is valid";
const char* kNoGradientOfBool = "its result is bool: no gradient flows through it";

OpInfo unary(std::string name, std::vector<DType> dtypes, Tolerance tol, Values values, SampleFn grad) {
  return {.name = std::move(name),
          .dtypes = {dtypes},
          .samples = same_dtype_samples(1, dtypes, values),
          .tolerance = tol,
          .grad_samples = std::move(grad),
          .no_invalid = kAnyShape};
}

OpInfo binary(std::string name, std::vector<DType> dtypes, Tolerance tol, Values values, SampleFn grad) {
  std::vector<Signature> invalid = {{{{dtypes[0], {2, 3}}, {dtypes[0], {4}}}}};
  if (dtypes.size() > 1) invalid.push_back({{{dtypes[0], {2}}, {dtypes[1], {2}}}});  // mixed dtypes
  return {.name = std::move(name),
          .dtypes = {dtypes, dtypes},
          .samples = same_dtype_samples(2, dtypes, values),
          .tolerance = tol,
          .grad_samples = std::move(grad),
          .invalid = std::move(invalid)};
}

OpInfo with_no_gradient(OpInfo row, std::string why) {
  row.no_gradient = std::move(why);
  return row;
}

OpInfo select_row() {
  return {.name = "select",
          .dtypes = {kBool, kAll, kAll},
          .samples = samples_of(3, kAll, Values::any,
                                [](DType t) { return std::vector<DType>{DType::boolean, t, t}; }),
          .tolerance = kExact,
          // (cond, x, y): equal shapes, x and y broadcast, all three broadcast, a scalar condition.
          .grad_samples =
              [](Rng& rng) {
                const std::vector<std::vector<Shape>> cases = {
                    {{2, 3}, {2, 3}, {2, 3}}, {{2, 3}, {3}, {}}, {{2, 1}, {1, 3}, {2, 3}}, {{3}, {2, 1}, {2, 3}},
                    {{}, {2, 3}, {3}}};
                std::vector<Sample> out;
                for (const auto& s : cases)
                  out.push_back({{random_tensor(rng, {DType::boolean, s[0]}), uniform(rng, s[1]), uniform(rng, s[2])}});
                return out;
              },
          .invalid = {{{{DType::boolean, {3}}, {DType::f32, {2}}, {DType::f32, {2}}}},
                      {{{DType::boolean, {2}}, {DType::f32, {2}}, {DType::i32, {2}}}}}};
}

OpInfo cast_row() {
  return {.name = "cast",
          .dtypes = {kEveryDType},
          // Every pair of dtypes, and f32's special values (saturating to i32, nan -> 0 or true, rounding
          // to bf16 and past its largest value to inf).
          .samples =
              [](Rng& rng) {
                std::vector<Sample> out;
                for (DType from : kEveryDType)
                  for (DType to : kEveryDType)
                    for (int i = 0; i < 3; ++i) out.push_back({{random_tensor(rng, {from, random_shape(rng)})}, {{"dtype", to}}});
                for (DType to : kEveryDType) {
                  Sample s{{random_tensor(rng, {DType::f32, {9, 17}})}, {{"dtype", to}}, "special values"};
                  fill_special_values(rng, s.operands[0]);
                  out.push_back(std::move(s));
                }
                out.push_back({{random_tensor(rng, {DType::f32, {0, 3}})}, {{"dtype", DType::i32}}, "size 0"});
                return out;
              },
          .tolerance = kExact,
          // Only f32 -> f32 carries a gradient; tests/autodiff checks that i32 cuts it.
          .grad_samples =
              [](Rng& rng) {
                std::vector<Sample> out;
                for (const Shape& s : kGradShapes) out.push_back({{uniform(rng, s)}, {{"dtype", DType::f32}}});
                return out;
              },
          .no_invalid = kAnyShape};
}

}  // namespace

std::vector<OpInfo> elementwise_rows() {
  const MakeValues any = in_range(-1.0f, 1.0f);
  const MakeValues positive = in_range(0.5f, 2.0f);
  const MakeValues nonzero = [](Rng& rng, const Shape& s) { return away_from_zero(rng, s, 0.5f); };
  const MakeValues grid0 = [](Rng& rng, const Shape& s) { return on_grid(rng, s, 0.0f); };
  const MakeValues grid1 = [](Rng& rng, const Shape& s) { return on_grid(rng, s, 0.2f); };
  std::vector<OpInfo> rows = {
      unary("neg", kNumeric, kExact, Values::any, unary_grad(any)),
      unary("relu", kFloat, kExact, Values::any,
            unary_grad([](Rng& rng, const Shape& s) { return away_from_zero(rng, s, 0.1f); })),
      unary("sqrt", kFloat, kExact, Values::positive, unary_grad(positive)),
      unary("rsqrt", kFloat, kExact, Values::positive, unary_grad(positive)),
      unary("exp", kFloat, kFastMath, Values::any, unary_grad(any)),
      unary("log", kFloat, kFastMath, Values::positive, unary_grad(positive)),
      unary("tanh", kFloat, kFastMath, Values::any, unary_grad(in_range(-2.0f, 2.0f))),
      unary("erf", kFloat, kErf, Values::any, unary_grad(in_range(-2.0f, 2.0f))),
      with_no_gradient(unary("logical_not", kBool, kExact, Values::any, {}), kNoGradientOfBool),
      binary("add", kNumeric, kExact, Values::any, binary_grad(any, any)),
      binary("sub", kNumeric, kExact, Values::any, binary_grad(any, any)),
      binary("mul", kNumeric, kExact, Values::any, binary_grad(any, any)),
      binary("div", kNumeric, kExact, Values::nonzero, binary_grad(any, nonzero)),
      // The exponent's gradient (log x) needs a positive base; tests/autodiff checks
      // the base's gradient for a negative base and integer exponents.
      binary("pow", kFloat, kExact, Values::positive, binary_grad(positive, in_range(-1.5f, 1.5f))),
      binary("maximum", kNumeric, kExact, Values::any, binary_grad(grid0, grid1)),
      binary("minimum", kNumeric, kExact, Values::any, binary_grad(grid0, grid1)),
      select_row(),
      cast_row(),
  };
  for (const char* op : {"less", "less_equal", "greater", "greater_equal"})
    rows.push_back(with_no_gradient(binary(op, kNumeric, kExact, Values::moderate, {}), kNoGradientOfBool));
  for (const char* op : {"equal", "not_equal"})
    rows.push_back(with_no_gradient(binary(op, kAll, kExact, Values::moderate, {}), kNoGradientOfBool));
  for (const char* op : {"logical_and", "logical_or"})
    rows.push_back(with_no_gradient(binary(op, kBool, kExact, Values::any, {}), kNoGradientOfBool));
  // What each reference kernel computes, element by element (maximum and relu
  // as `x > y ? x : y`, so a nan in y wins and one in x loses, as xtensor's).
  const std::map<std::string, ExpectedFn> expected = {
      {"neg", pointwise([](auto x) { return -x; })},
      {"relu", pointwise([](auto x) { return x > 0 ? x : decltype(x)(0); })},
      {"sqrt", pointwise([](auto x) { return std::sqrt(x); })},
      {"rsqrt", pointwise([](auto x) { return decltype(x)(1) / std::sqrt(x); })},
      {"exp", pointwise([](auto x) { return std::exp(x); })},
      {"log", pointwise([](auto x) { return std::log(x); })},
      {"tanh", pointwise([](auto x) { return std::tanh(x); })},
      {"erf", pointwise([](auto x) { return std::erf(x); })},
      {"logical_not", pointwise([](auto x) { return !x; })},
      {"add", pointwise([](auto x, auto y) { return x + y; })},
      {"sub", pointwise([](auto x, auto y) { return x - y; })},
      {"mul", pointwise([](auto x, auto y) { return x * y; })},
      {"div", pointwise([](auto x, auto y) { return x / y; })},  // i32: truncated toward zero
      {"pow", pointwise([](auto x, auto y) { return std::pow(x, y); })},
      {"maximum", pointwise([](auto x, auto y) { return x > y ? x : y; })},
      {"minimum", pointwise([](auto x, auto y) { return x < y ? x : y; })},
      {"less", pointwise([](auto x, auto y) { return x < y; })},
      {"less_equal", pointwise([](auto x, auto y) { return x <= y; })},
      {"greater", pointwise([](auto x, auto y) { return x > y; })},
      {"greater_equal", pointwise([](auto x, auto y) { return x >= y; })},
      {"equal", pointwise([](auto x, auto y) { return x == y; })},
      {"not_equal", pointwise([](auto x, auto y) { return x != y; })},
      {"logical_and", pointwise([](auto x, auto y) { return x && y; })},
      {"logical_or", pointwise([](auto x, auto y) { return x || y; })},
      {"select", expected_select},
      {"cast", expected_cast}};
  for (OpInfo& row : rows) row.expected = expected.at(row.name);
  return rows;
}

}  // namespace kiln::test
