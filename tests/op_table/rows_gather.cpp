// Rows of gather, scatter_add and update_slice (ops/gather.cpp). Forward
// comparisons are exact: gather and update_slice copy elements; scatter_add adds each result element's updates
// in index order starting from 0, as the reference does, so even f32 sums (of
// special values too) round identically. Out-of-range indices are run-time
// errors, checked in tests/jit/gather_test.cpp.
#include <tuple>

#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

using I = Tensor::I32;

// A random shape of rank [min_rank, max_rank] with no zero dims.
Shape shape_of_rank(Rng& rng, int64_t min_rank, int64_t max_rank) {
  Shape s;
  for (int64_t k = rng.uniform(min_rank, max_rank); k > 0; --k)
    s.push_back(rng.pick(std::vector<int64_t>{1, 2, 3, 5, 15, 16, 17, 33}));
  return s;
}

void maybe_special(Rng& rng, Tensor& x) {
  if (x.dtype() == DType::f32 && rng.coin(0.25)) fill_special_values(rng, x);
}

// Tables of rank 1 to 3, indices of rank 0 to 2, every axis from either end,
// duplicate indices.
std::vector<Sample> gather_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType dtype : kEveryDType)
    for (int i = 0; i < 8; ++i) {
      const Shape table = shape_of_rank(rng, 1, 3), indices = shape_of_rank(rng, 0, 2);
      const auto rank = static_cast<int64_t>(table.size());
      const int64_t axis = rng.uniform(-rank, rank - 1);
      Sample s{{random_tensor(rng, {dtype, table}),
                random_indices(rng, indices, table[static_cast<size_t>(axis < 0 ? axis + rank : axis)])},
               {{"axis", axis}}};
      maybe_special(rng, s.operands[0]);
      out.push_back(std::move(s));
    }
  out.push_back({{random_tensor(rng, {DType::f32, {5, 3}}), random_indices(rng, {0}, 5)}, {}, "size 0"});
  out.push_back({{random_tensor(rng, {DType::f32, {50, 300}}), random_indices(rng, {2000}, 50)}, {}, "large"});
  return out;
}

// updates = outer + indices + inner, the result outer + [size] + inner; the
// embedding gradient (many duplicate rows) and a per-row scatter, large.
std::vector<Sample> scatter_add_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType dtype : {DType::f32, DType::i32})
    for (int i = 0; i < 8; ++i) {
      const Shape outer = shape_of_rank(rng, 0, 2), indices = shape_of_rank(rng, 0, 2);
      const Shape inner = shape_of_rank(rng, 0, 2);
      const int64_t size = rng.pick(std::vector<int64_t>{1, 2, 5, 17});
      const auto axis = static_cast<int64_t>(outer.size());
      const int64_t result_rank = axis + 1 + static_cast<int64_t>(inner.size());
      Sample s{{random_tensor(rng, {dtype, concat_shapes(concat_shapes(outer, indices), inner)}),
                random_indices(rng, indices, size)},
               {{"axis", rng.coin() ? axis : axis - result_rank}, {"size", size}}};
      maybe_special(rng, s.operands[0]);
      out.push_back(std::move(s));
    }
  out.push_back({{random_tensor(rng, {DType::f32, {2, 5}}), random_indices(rng, {2}, 1)},
                 {{"size", int64_t{1}}},
                 "size 1"});
  out.push_back({{random_tensor(rng, {DType::f32, {0, 5}}), random_indices(rng, {0}, 3)},
                 {{"size", int64_t{3}}},
                 "size 0"});
  out.push_back({{random_tensor(rng, {DType::f32, {3000, 200}}, Values::moderate), random_indices(rng, {3000}, 50)},
                 {{"size", int64_t{50}}},
                 "large"});
  out.push_back({{random_tensor(rng, {DType::f32, {64, 700, 33}}, Values::moderate), random_indices(rng, {700}, 9)},
                 {{"axis", int64_t{1}}, {"size", int64_t{9}}},
                 "large"});
  return out;
}

// x of rank 1 to 3, a block of 1 to all of the axis's length, every axis from
// either end, starts before, inside and past the range (clamped); the decoder's
// cache write, large.
std::vector<Sample> update_slice_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType dtype : {DType::f32, DType::i32, DType::boolean})
    for (int i = 0; i < 8; ++i) {
      const Shape x = shape_of_rank(rng, 1, 3);
      const auto rank = static_cast<int64_t>(x.size());
      const int64_t axis = rng.uniform(-rank, rank - 1);
      const auto a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
      Shape update = x;
      update[a] = rng.uniform(1, x[a]);
      const auto start = static_cast<int32_t>(rng.uniform(-3, x[a] + 3));
      Sample s{{random_tensor(rng, {dtype, x}), random_tensor(rng, {dtype, update}), Tensor(I(start))},
               {{"axis", axis}}};
      maybe_special(rng, s.operands[0]);
      out.push_back(std::move(s));
    }
  out.push_back({{random_tensor(rng, {DType::f32, {16, 4, 128, 64}}), random_tensor(rng, {DType::f32, {16, 4, 1, 64}}),
                  Tensor(I{37})},
                 {{"axis", int64_t{2}}},
                 "large"});
  return out;
}

struct IndexCase {
  Shape values;
  I indices;
  Attrs attrs;
};

SampleFn index_grad(std::vector<IndexCase> cases) {
  return [cases](Rng& rng) {
    std::vector<Sample> out;
    for (const IndexCase& c : cases) out.push_back({{uniform(rng, c.values), Tensor(c.indices)}, c.attrs});
    return out;
  };
}

Attrs axis(int64_t a) { return {{"axis", a}}; }
Attrs axis_size(int64_t a, int64_t size) { return {{"axis", a}, {"size", size}}; }

}  // namespace

std::vector<OpInfo> gather_rows() {
  return {{.name = "gather",
           .dtypes = {kEveryDType, {DType::i32}},
           .samples = gather_samples,
           .tolerance = kExact,
           // Repeated indices, rank-2 and scalar indices, inner axes.
           .grad_samples = index_grad({{{4, 3}, I{0, 2, 2, 3, 0}, axis(0)},
                                       {{4, 3}, I{{1, 1}, {3, 0}}, axis(0)},
                                       {{4, 3}, I(2), axis(0)},
                                       {{5}, I{4, 4, 4, 1}, axis(0)},
                                       {{2, 5, 3}, I{4, 1, 4}, axis(1)},
                                       {{2, 5, 3}, I{{0, 2}, {2, 2}}, axis(1)},
                                       {{3, 4}, I{3, 0, 3}, axis(-1)},
                                       {{2, 3, 4}, I{1, 1, 0}, axis(2)}}),
           .invalid = {{{{DType::f32, {}}, {DType::i32, {2}}}},
                       {{{DType::f32, {3, 2}}, {DType::i32, {2}}}, axis(2)}}},
          {.name = "scatter_add",
           .dtypes = {{DType::f32, DType::i32}, {DType::i32}},
           .samples = scatter_add_samples,
           .tolerance = kExact,
           .no_fusion = "a kernel of its own: it reads its operands from memory (no generators) and, not "
                        "being elemental, no loop takes it in",
           .grad_samples = index_grad({{{4, 2}, I{1, 0, 1, 3}, axis_size(0, 4)},
                                       {{2, 3}, I{2, 2, 0}, axis_size(1, 5)},
                                       {{2, 2, 3}, I{{0, 1}, {1, 1}}, axis_size(0, 2)},
                                       {{3}, I(1), axis_size(0, 2)}}),
           .invalid = {{{{DType::f32, {3, 2}}, {DType::i32, {2}}}, axis_size(0, 4)},
                       {{{DType::f32, {3}}, {DType::i32, {3, 1}}}, axis_size(0, 4)},
                       {{{DType::f32, {3, 2}}, {DType::i32, {3}}}, axis_size(0, -1)},
                       {{{DType::f32, {3, 2}}, {DType::i32, {3}}}, axis_size(2, 4)}}},
          {.name = "update_slice",
           .dtypes = {{DType::f32, DType::i32, DType::boolean}, {DType::f32, DType::i32, DType::boolean}, {DType::i32}},
           .samples = update_slice_samples,
           .tolerance = kExact,
           .no_fusion = "a kernel of its own: it reads its operands from memory and may write into x's",
           .grad_samples =
               [](Rng& rng) {
                 std::vector<Sample> out;
                 for (const auto& [x, update, start, a] :
                      std::vector<std::tuple<Shape, Shape, int32_t, int64_t>>{{{5}, {2}, 1, 0},
                                                                              {{3, 4}, {3, 2}, 9, 1},
                                                                              {{2, 5, 3}, {2, 1, 3}, -1, 1},
                                                                              {{4, 2}, {4, 2}, 2, 0}})
                   out.push_back({{uniform(rng, x), uniform(rng, update), Tensor(I(start))}, axis(a)});
                 return out;
               },
           .invalid = {{{{DType::f32, {3, 2}}, {DType::f32, {4, 2}}, {DType::i32, {}}}, axis(0)},
                       {{{DType::f32, {3, 2}}, {DType::f32, {1, 3}}, {DType::i32, {}}}, axis(0)},
                       {{{DType::f32, {3, 2}}, {DType::f32, {1, 2}}, {DType::i32, {2}}}, axis(0)},
                       {{{DType::f32, {3, 2}}, {DType::f32, {1, 2}}, {DType::f32, {}}}, axis(0)},
                       {{{DType::f32, {3, 2}}, {DType::i32, {1, 2}}, {DType::i32, {}}}, axis(0)},
                       {{{DType::f32, {3, 2}}, {DType::f32, {1, 2}}, {DType::i32, {}}}, axis(2)},
                       {{{DType::f32, {}}, {DType::f32, {}}, {DType::i32, {}}}, axis(0)}}}};
}

}  // namespace kiln::test
