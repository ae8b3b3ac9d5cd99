// Shape ops, identity and constants compiled alone against the interpreter. They
// move or make values without arithmetic, so every comparison is exact.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>

#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr Tolerance kExact{0, 0};
const std::vector<DType> kAll = {DType::f32, DType::i32, DType::boolean};

// A random permutation of 0..n-1.
std::vector<int64_t> random_perm(Rng& rng, size_t n) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(i) - 1))]);
  return p;
}

}  // namespace

TEST_CASE("jit identity and stop_gradient copy their operand") {
  Rng rng(1);
  for (DType t : kAll)
    for (int i = 0; i < 4; ++i) {
      check_op("identity", {{t, random_shape(rng)}}, {}, kExact, rng);
      check_op("stop_gradient", {{t, random_shape(rng)}}, {}, kExact, rng);
    }
}

TEST_CASE("jit reshape keeps row-major order whether rows nest or not") {
  Rng rng(2);
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{6, 40}, {240}},      {{240}, {6, 40}},      {{6, 40}, {3, 80}},  {{6, 40}, {12, 20}},  // operand rows nest
      {{12, 20}, {6, 40}},   {{5, 7, 3}, {7, 15}},  {{35}, {5, 7}},      {{1}, {}},            // lanes go one by one
      {{}, {1, 1}},          {{17, 1}, {1, 17}},    {{33, 2}, {2, 33}},  {{2, 3, 16}, {6, 16}},
  };
  for (DType t : kAll)
    for (const auto& [from, to] : cases) check_op("reshape", {{t, from}}, {{"shape", to}}, kExact, rng);
  check_op("reshape", {{DType::f32, {4, 9}}}, {{"shape", Shape{-1, 6}}}, kExact, rng);
}

TEST_CASE("jit transpose with every kind of permutation") {
  Rng rng(3);
  for (DType t : kAll)
    for (int i = 0; i < 16; ++i) {
      Shape s = random_shape(rng, 4);
      if (s.empty()) s = {17};
      check_op("transpose", {{t, s}}, {{"perm", random_perm(rng, s.size())}}, kExact, rng);
    }
  check_op("transpose", {{DType::f32, {33, 40}}}, {{"perm", std::vector<int64_t>{1, 0}}}, kExact, rng);
}

TEST_CASE("jit broadcast to larger shapes") {
  Rng rng(4);
  for (DType t : kAll)
    for (int i = 0; i < 12; ++i) {
      const Shape to = random_shape(rng, 4);
      check_op("broadcast", {{t, broadcast_partner(rng, to)}}, {{"shape", to}}, kExact, rng);
    }
}

TEST_CASE("jit slice with negative and clamped bounds") {
  Rng rng(5);
  for (DType t : kAll)
    for (int i = 0; i < 16; ++i) {
      Shape s = random_shape(rng, 3);
      if (s.empty()) s = {33};
      std::vector<int64_t> axes, starts, ends;
      for (size_t k = 0; k < s.size(); ++k) {
        if (rng.coin(0.3)) continue;
        const int64_t start = rng.uniform(0, s[k] - 1), end = rng.uniform(start + 1, s[k]);
        axes.push_back(rng.coin() ? static_cast<int64_t>(k) : static_cast<int64_t>(k) - static_cast<int64_t>(s.size()));
        starts.push_back(rng.coin() ? start : start - s[k]);
        ends.push_back(end == s[k] && rng.coin() ? 1000 : end);
      }
      check_op("slice", {{t, s}}, {{"axes", axes}, {"starts", starts}, {"ends", ends}}, kExact, rng);
    }
}

TEST_CASE("jit concat along every axis including the innermost") {
  Rng rng(6);
  for (DType t : kAll)
    for (int i = 0; i < 12; ++i) {
      Shape s = random_shape(rng, 3);
      if (s.empty()) s = {5};
      const auto axis = static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(s.size()) - 1));
      std::vector<TensorType> operands;
      for (int64_t n = rng.uniform(1, 4); n > 0; --n) {
        Shape part = s;
        part[axis] = rng.pick(std::vector<int64_t>{1, 3, 16, 17});
        operands.push_back({t, part});
      }
      check_op("concat", operands, {{"axis", static_cast<int64_t>(axis)}}, kExact, rng);
    }
}

TEST_CASE("jit constants fill iota and causal_mask") {
  Rng rng(7);
  for (DType t : kAll)
    for (double value : {0.0, -2.5, 1e30, 7.0}) check_op("fill", {}, {{"shape", random_shape(rng)}, {"dtype", t}, {"value", value}}, kExact, rng);
  for (DType t : {DType::f32, DType::i32})
    for (int i = 0; i < 8; ++i) {
      Shape s = random_shape(rng, 3);
      if (s.empty()) s = {40};
      const int64_t axis = rng.uniform(0, static_cast<int64_t>(s.size()) - 1);
      check_op("iota", {}, {{"shape", s}, {"axis", axis}, {"dtype", t}}, kExact, rng);
    }
  for (int64_t size : {0, 1, 2, 15, 16, 17, 40}) check_op("causal_mask", {}, {{"size", size}}, kExact, rng);
}

TEST_CASE("jit dropout draws the interpreter's Philox mask bit for bit") {
  Rng rng(8);
  for (double rate : {0.0, 0.1, 0.5, 0.9, 0.999})
    for (int i = 0; i < 4; ++i) {
      const int64_t seed = rng.pick(std::vector<int64_t>{0, 1, 42, -7, int64_t{1} << 40});
      check_op("dropout", {{DType::f32, random_shape(rng)}, {DType::i32, {}}}, {{"rate", rate}, {"seed", seed}},
               kExact, rng);
    }
  check_op("dropout", {{DType::f32, {300, 301}}, {DType::i32, {}}}, {{"rate", 0.25}, {"seed", int64_t{3}}}, kExact,
           rng);
}
