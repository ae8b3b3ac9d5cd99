// The row of dropout (ops/dropout.cpp): the JIT draws the interpreter's Philox
// mask bit for bit, so the forward comparison is exact, special values
// included (a dropped inf or nan is 0, a kept one scaled). The Philox stream
// itself and the kept fraction are checked in tests/ops/dropout_test.cpp.
#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {


Tensor key(int32_t k) { return Tensor(Tensor::I32(k)); }

// Rates from none to almost all, seeds of both signs and past 32 bits, random keys.
std::vector<Sample> dropout_samples(Rng& rng) {
  std::vector<Sample> out;
  for (double rate : {0.0, 0.1, 0.5, 0.9, 0.999})
    for (int i = 0; i < 3; ++i) {
      const int64_t seed = rng.pick(std::vector<int64_t>{0, 1, 42, -7, int64_t{1} << 40});
      Sample s{{random_tensor(rng, {DType::f32, random_shape(rng)}), key(static_cast<int32_t>(rng.uniform(-5, 1000)))},
               {{"rate", rate}, {"seed", seed}}};
      if (i == 2) {
        fill_special_values(rng, s.operands[0]);
        s.note = "special values";
      }
      out.push_back(std::move(s));
    }
  // A part of a batch: rows from first_example on, offsets that are not multiples of 4 included.
  for (const auto& [shape, examples] : std::vector<std::pair<Shape, int64_t>>{{{3, 5}, 3}, {{4, 2, 7}, 4}, {{6, 8}, 2}}) {
    const auto first = static_cast<int32_t>(rng.uniform(0, 50));
    out.push_back({{random_tensor(rng, {DType::f32, shape}), key(static_cast<int32_t>(rng.uniform(0, 100))),
                    key(first)},
                   {{"rate", 0.4}, {"seed", int64_t{5}}, {"examples", examples}},
                   "a part of a batch"});
  }
  out.push_back({{random_tensor(rng, {DType::f32, {0, 3}}), key(1)}, {{"rate", 0.5}}, "size 0"});
  out.push_back({{random_tensor(rng, {DType::f32, {300, 301}}), key(3)}, {{"rate", 0.25}, {"seed", int64_t{3}}}, "large"});
  return out;
}

// With the key fixed the mask is fixed, so dropout is linear in x and central
// differences are exact up to rounding.
std::vector<Sample> dropout_grad_samples(Rng& rng) {
  struct Case {
    Shape shape;
    double rate;
    int64_t seed;
    int32_t key;
  };
  const std::vector<Case> cases = {
      {{4, 5}, 0.3, 0, 0}, {{4, 5}, 0.3, 7, 3}, {{50}, 0.3, 1, 12}, {{2, 3, 4}, 0.5, 2, 1}, {{3}, 0.0, 0, 0}};
  std::vector<Sample> out;
  for (const Case& c : cases) out.push_back({{uniform(rng, c.shape), key(c.key)}, {{"rate", c.rate}, {"seed", c.seed}}});
  out.push_back({{uniform(rng, {3, 5}), key(2), key(7)}, {{"rate", 0.3}, {"examples", int64_t{3}}}});
  return out;
}

}  // namespace

std::vector<OpInfo> dropout_rows() {
  return {{.name = "dropout",
           .dtypes = {{DType::f32}, {DType::i32}, {DType::i32}},
           .samples = dropout_samples,
           .tolerance = kExact,
           .grad_samples = dropout_grad_samples,
           .invalid = {{{{DType::f32, {3}}, {DType::i32, {1}}}, {{"rate", 0.5}}},
                       {{{DType::f32, {3}}, {DType::i32, {}}}, {{"rate", 1.0}}},
                       {{{DType::f32, {3}}, {DType::i32, {}}}, {{"rate", -0.1}}},
                       // a part's first example: i32[] with an example count that divides x
                       {{{DType::f32, {3, 5}}, {DType::i32, {}}, {DType::i32, {}}}, {{"rate", 0.5}, {"examples", int64_t{2}}}},
                       {{{DType::f32, {3, 5}}, {DType::i32, {}}, {DType::i32, {}}}, {{"rate", 0.5}}},
                       {{{DType::f32, {3, 5}}, {DType::i32, {}}, {DType::i32, {1}}}, {{"rate", 0.5}, {"examples", int64_t{3}}}},
                       {{{DType::f32, {3, 5}}, {DType::i32, {}}}, {{"rate", 0.5}, {"examples", int64_t{3}}}}}}};
}

}  // namespace kiln::test
