// Rows of the shape ops (ops/shape_ops.cpp) and of identity and stop_gradient
// (ops/identity.cpp). They move values without arithmetic, so every forward
// comparison is exact, special values included.
#include <numeric>

#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

using Ints = std::vector<int64_t>;

// A tensor of dtype t whose f32 values include the edges of f32.
Tensor moved_values(Rng& rng, DType t, const Shape& s) {
  Tensor x = random_tensor(rng, {t, s});
  if (t == DType::f32 && rng.coin()) fill_special_values(rng, x);
  return x;
}

// A random permutation of 0..n-1.
Ints random_perm(Rng& rng, size_t n) {
  Ints p(n);
  std::iota(p.begin(), p.end(), 0);
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(i) - 1))]);
  return p;
}

Shape nonscalar_shape(Rng& rng, int max_rank, int64_t fallback) {
  Shape s = random_shape(rng, max_rank);
  if (s.empty()) s = {fallback};
  return s;
}

// Operand rows that nest in the result's rows, and lanes that go one by one.
std::vector<Sample> reshape_samples(Rng& rng) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{6, 40}, {240}},    {{240}, {6, 40}},     {{6, 40}, {3, 80}}, {{6, 40}, {12, 20}}, {{12, 20}, {6, 40}},
      {{5, 7, 3}, {7, 15}}, {{35}, {5, 7}},       {{1}, {}},          {{}, {1, 1}},        {{17, 1}, {1, 17}},
      {{33, 2}, {2, 33}},  {{2, 3, 16}, {6, 16}}, {{4, 9}, {-1, 6}},  {{0, 3}, {3, 0}}};
  std::vector<Sample> out;
  for (const auto& [from, to] : cases) out.push_back({{moved_values(rng, rng.pick(kEveryDType), from)}, {{"shape", to}}});
  for (DType t : kEveryDType) out.push_back({{moved_values(rng, t, {2, 3, 4})}, {{"shape", Shape{4, -1}}}});
  return out;
}

std::vector<Sample> transpose_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType t : kEveryDType)
    for (int i = 0; i < 8; ++i) {
      const Shape s = nonscalar_shape(rng, 4, 17);
      out.push_back({{moved_values(rng, t, s)}, {{"perm", random_perm(rng, s.size())}}});
    }
  out.push_back({{moved_values(rng, DType::f32, {33, 40})}, {{"perm", Ints{1, 0}}}});
  out.push_back({{moved_values(rng, DType::f32, {300, 257})}, {{"perm", Ints{1, 0}}}, "large"});
  return out;
}

std::vector<Sample> broadcast_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType t : kEveryDType)
    for (int i = 0; i < 8; ++i) {
      const Shape to = random_shape(rng, 4);
      out.push_back({{moved_values(rng, t, broadcast_partner(rng, to))}, {{"shape", to}}});
    }
  out.push_back({{moved_values(rng, DType::f32, {1, 3})}, {{"shape", Shape{0, 3}}}, "size 0"});
  return out;
}

// Starts and ends from either end, ends past the dim (clamped), axes named
// from either end, some axes left whole.
std::vector<Sample> slice_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType t : kEveryDType)
    for (int i = 0; i < 8; ++i) {
      const Shape s = nonscalar_shape(rng, 3, 33);
      Ints axes, starts, ends;
      for (size_t k = 0; k < s.size(); ++k) {
        if (rng.coin(0.3)) continue;
        const int64_t start = rng.uniform(0, s[k] - 1), end = rng.uniform(start + 1, s[k]);
        axes.push_back(rng.coin() ? static_cast<int64_t>(k) : static_cast<int64_t>(k) - static_cast<int64_t>(s.size()));
        starts.push_back(rng.coin() ? start : start - s[k]);
        ends.push_back(end == s[k] && rng.coin() ? 1000 : end);
      }
      out.push_back({{moved_values(rng, t, s)}, {{"axes", axes}, {"starts", starts}, {"ends", ends}}});
    }
  return out;
}

// 1 to 4 operands along every axis, the innermost included; an empty operand.
std::vector<Sample> concat_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType t : kEveryDType)
    for (int i = 0; i < 8; ++i) {
      const Shape s = nonscalar_shape(rng, 3, 5);
      const auto axis = static_cast<size_t>(rng.uniform(0, static_cast<int64_t>(s.size()) - 1));
      Sample sample{{}, {{"axis", static_cast<int64_t>(axis)}}};
      for (int64_t n = rng.uniform(1, 4); n > 0; --n) {
        Shape part = s;
        part[axis] = rng.pick(Ints{1, 3, 16, 17});
        sample.operands.push_back(moved_values(rng, t, part));
      }
      out.push_back(std::move(sample));
    }
  out.push_back({{moved_values(rng, DType::f32, {2, 3}), moved_values(rng, DType::f32, {0, 3})},
                 {{"axis", int64_t{0}}},
                 "size 0"});
  return out;
}

std::vector<Sample> copy_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType t : kEveryDType)
    for (int i = 0; i < 4; ++i) out.push_back({{moved_values(rng, t, random_shape(rng))}});
  out.push_back({{moved_values(rng, DType::f32, {0, 4})}, {}, "size 0"});
  return out;
}

SampleFn grad_cases(std::vector<std::pair<Shape, Attrs>> cases) {
  return [cases](Rng& rng) {
    std::vector<Sample> out;
    for (const auto& [s, attrs] : cases) out.push_back({{uniform(rng, s)}, attrs});
    return out;
  };
}

OpInfo reshape_row() {
  return {.name = "reshape",
          .dtypes = {kEveryDType},
          .samples = reshape_samples,
          .tolerance = kExact,
          .grad_samples = grad_cases({{{2, 3, 4}, {{"shape", Shape{6, 4}}}},
                                      {{2, 3, 4}, {{"shape", Shape{4, -1}}}},
                                      {{2, 3, 4}, {{"shape", Shape{-1}}}},
                                      {{6}, {{"shape", Shape{3, 1, 2}}}},
                                      {{}, {{"shape", Shape{1, 1}}}},
                                      {{1, 5}, {{"shape", Shape{5}}}}}),
          .invalid = {{{{DType::f32, {2, 3}}}, {{"shape", Shape{4}}}},
                      {{{DType::f32, {2, 3}}}, {{"shape", Shape{-1, -1}}}},
                      {{{DType::f32, {2, 3}}}, {{"shape", Shape{-2, -3}}}}}};
}

OpInfo transpose_row() {
  // Three-cycles, whose inverse is the other cycle: a rule reusing perm fails
  // there; [3,3,3]: equal dims, only the values show a wrong permutation.
  return {.name = "transpose",
          .dtypes = {kEveryDType},
          .samples = transpose_samples,
          .tolerance = kExact,
          .grad_samples = grad_cases({{{3, 4}, {{"perm", Ints{1, 0}}}},
                                      {{3, 3, 3}, {{"perm", Ints{2, 0, 1}}}},
                                      {{2, 3, 4}, {{"perm", Ints{2, 0, 1}}}},
                                      {{2, 3, 4}, {{"perm", Ints{1, 2, 0}}}},
                                      {{2, 3, 4}, {{"perm", Ints{0, 2, 1}}}},
                                      {{2, 1, 3, 2}, {{"perm", Ints{3, 1, 0, 2}}}}}),
          .invalid = {{{{DType::f32, {2, 3}}}, {{"perm", Ints{0}}}},
                      {{{DType::f32, {2, 3}}}, {{"perm", Ints{0, 0}}}},
                      {{{DType::f32, {2, 3}}}, {{"perm", Ints{0, 2}}}}}};
}

OpInfo broadcast_row() {
  return {.name = "broadcast",
          .dtypes = {kEveryDType},
          .samples = broadcast_samples,
          .tolerance = kExact,
          .grad_samples = grad_cases({{{3}, {{"shape", Shape{2, 3}}}},
                                      {{2, 1}, {{"shape", Shape{2, 4}}}},
                                      {{}, {{"shape", Shape{3, 2}}}},
                                      {{1, 3, 1}, {{"shape", Shape{2, 3, 4}}}},
                                      {{4}, {{"shape", Shape{2, 3, 4}}}},
                                      {{2, 3}, {{"shape", Shape{2, 3}}}}}),
          .invalid = {{{{DType::f32, {2, 3}}}, {{"shape", Shape{3}}}},
                      {{{DType::f32, {2, 3}}}, {{"shape", Shape{4, 3, 3}}}}}};
}

Attrs slice_attrs(Ints axes, Ints starts, Ints ends) { return {{"axes", axes}, {"starts", starts}, {"ends", ends}}; }

OpInfo slice_row() {
  return {.name = "slice",
          .dtypes = {kEveryDType},
          .samples = slice_samples,
          .tolerance = kExact,
          .grad_samples = grad_cases({{{6}, slice_attrs({0}, {1}, {4})},
                                      {{4, 5}, slice_attrs({0, 1}, {1, -4}, {-1, 4})},
                                      {{3, 4, 5}, slice_attrs({-1, 0}, {-3, 0}, {100, 2})},  // end clamped
                                      {{3, 4, 5}, slice_attrs({1}, {-2}, {4})},              // cut before only
                                      {{3, 4, 5}, slice_attrs({2}, {0}, {1})},               // cut after only
                                      {{3, 4, 5}, slice_attrs({0, 1, 2}, {1, 1, 1}, {2, 3, 4})},
                                      {{2, 3}, slice_attrs({0}, {0}, {2})}}),  // the whole axis
          .invalid = {{{{DType::f32, {4}}}, slice_attrs({0}, {2}, {2})},
                      {{{DType::f32, {4, 4}}}, slice_attrs({0, 0}, {0, 1}, {2, 3})},
                      {{{DType::f32, {4}}}, slice_attrs({0}, {0, 1}, {2})},
                      {{{DType::f32, {4}}}, slice_attrs({1}, {0}, {2})}}};
}

OpInfo concat_row() {
  return {.name = "concat",
          .dtypes = {kEveryDType},
          .samples = concat_samples,
          .tolerance = kExact,
          .grad_samples =
              [](Rng& rng) {
                const std::vector<std::pair<std::vector<Shape>, int64_t>> cases = {
                    {{{2, 3}, {1, 3}, {3, 3}}, 0},       {{{2, 1}, {2, 3}}, 1},
                    {{{2, 1}, {2, 3}}, -1},              {{{2, 3, 1}, {2, 3, 2}, {2, 3, 1}}, 2},
                    {{{1, 3, 2}, {2, 3, 2}}, 0},         {{{2, 1, 2}, {2, 2, 2}, {2, 3, 2}}, 1},
                    {{{4}}, 0},                          // a single operand gets dy itself
                    {{{2, 3}, {0, 3}}, 0}};              // an empty operand gets an empty gradient
                std::vector<Sample> out;
                for (const auto& [shapes, axis] : cases) {
                  Sample s{{}, {{"axis", axis}}};
                  for (const Shape& shape : shapes) s.operands.push_back(uniform(rng, shape));
                  out.push_back(std::move(s));
                }
                return out;
              },
          .invalid = {{{{DType::f32, {2, 3}}, {DType::f32, {2, 4}}}, {{"axis", int64_t{0}}}},
                      {{{DType::f32, {2, 3}}, {DType::i32, {2, 3}}}, {{"axis", int64_t{0}}}},
                      {{{DType::f32, {}}, {DType::f32, {}}}, {{"axis", int64_t{0}}}},
                      {{{DType::f32, {2}}}, {{"axis", int64_t{1}}}}}};
}

OpInfo copy_row(std::string name, std::string no_fusion, std::string no_gradient) {
  OpInfo row{.name = std::move(name),
             .dtypes = {kEveryDType},
             .samples = copy_samples,
             .tolerance = kExact,
             .no_fusion = std::move(no_fusion),
             .no_invalid = "every shape is valid"};
  if (no_gradient.empty())
    row.grad_samples = [](Rng& rng) { return std::vector<Sample>{{{uniform(rng, {2, 3})}}, {{uniform(rng, {})}}}; };
  row.no_gradient = std::move(no_gradient);
  return row;
}

}  // namespace

std::vector<OpInfo> shape_rows() {
  return {reshape_row(),
          transpose_row(),
          broadcast_row(),
          slice_row(),
          concat_row(),
          copy_row("identity", "the simplify pass removes it before fusion (it stays only to name an output)", ""),
          copy_row("stop_gradient", "",
                   "its rule cuts the path by design, so its gradient is 0, not the finite differences' 1: "
                   "tests/autodiff/autodiff_test.cpp checks the cut")};
}

}  // namespace kiln::test
