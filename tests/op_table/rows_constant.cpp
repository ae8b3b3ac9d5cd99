// Rows of fill, iota and causal_mask (ops/constant.cpp): no operands, results
// made from attributes alone, compared exactly.
#include <cmath>
#include <limits>

#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

const char* kNoOperands = "no operands: nothing to differentiate";

// Every dtype with values it holds: exact ones, f32's that round to nothing
// (1e-45) and the non-finite ones, i32's extremes; shapes from scalars to size
// 0. A value the dtype cannot hold is an invalid sample.
std::vector<Sample> fill_samples(Rng& rng) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<DType, std::vector<double>>> values = {
      {DType::f32, {0.0, -2.5, 1e30, 7.0, 1e-45, -inf, nan}},
      {DType::i32, {0.0, -7.0, 2147483647.0, -2147483648.0}},
      {DType::boolean, {0.0, 1.0}},
      // Rounded to bf16: a tie to even (1 + 2^-8), bf16's largest, a subnormal, and the non-finite ones.
      {DType::bf16, {0.0, 1.00390625, 3.3895313892515355e38, 1e-40, inf, nan}}};
  std::vector<Sample> out;
  for (const auto& [t, fitting] : values)
    for (double value : fitting) out.push_back({{}, {{"shape", random_shape(rng)}, {"dtype", t}, {"value", value}}});
  out.push_back({{}, {{"shape", Shape{3, 0}}}, "size 0"});
  out.push_back({{}, {{"shape", Shape{300, 301}}, {"value", 0.5}}, "large"});
  return out;
}

std::vector<Sample> iota_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType t : {DType::f32, DType::i32})
    for (int i = 0; i < 6; ++i) {
      Shape s = random_shape(rng, 3);
      if (s.empty()) s = {40};
      const auto rank = static_cast<int64_t>(s.size());
      out.push_back({{}, {{"shape", s}, {"axis", rng.uniform(-rank, rank - 1)}, {"dtype", t}}});
    }
  out.push_back({{}, {{"shape", Shape{2, 0}}, {"axis", int64_t{1}}}, "size 0"});
  return out;
}

std::vector<Sample> causal_mask_samples(Rng&) {
  std::vector<Sample> out;
  for (int64_t size : {0, 1, 2, 15, 16, 17, 40}) out.push_back({{}, {{"size", size}}});
  out.push_back({{}, {{"size", int64_t{600}}}, "large"});
  return out;
}

}  // namespace

std::vector<OpInfo> constant_rows() {
  return {{.name = "fill",
           .samples = fill_samples,
           .tolerance = kExact,
           .no_gradient = kNoOperands,
           .invalid = {{{}, {{"shape", Shape{2, -1}}}},
                       {{}, {{"shape", Shape{2}}, {"dtype", DType::i32}, {"value", 1e30}}},
                       {{}, {{"shape", Shape{2}}, {"dtype", DType::i32}, {"value", -2.5}}},
                       {{}, {{"shape", Shape{2}}, {"dtype", DType::boolean}, {"value", 7.0}}},
                       {{}, {{"shape", Shape{2}}, {"value", 1e300}}}}},
          {.name = "iota",
           .samples = iota_samples,
           .tolerance = kExact,
           .no_gradient = kNoOperands,
           .invalid = {{{}, {{"shape", Shape{2, 3}}, {"axis", int64_t{2}}}},
                       {{}, {{"shape", Shape{}}, {"axis", int64_t{0}}}},
                       {{}, {{"shape", Shape{2}}, {"dtype", DType::boolean}}},
                       {{}, {{"shape", Shape{(int64_t{1} << 31) + 1}}, {"dtype", DType::i32}}}}},
          {.name = "causal_mask",
           .samples = causal_mask_samples,
           .tolerance = kExact,
           .no_gradient = kNoOperands,
           .invalid = {{{}, {{"size", int64_t{-3}}}}}}};
}

}  // namespace kiln::test
