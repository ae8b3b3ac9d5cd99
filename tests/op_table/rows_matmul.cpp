// The row of matmul (ops/matmul.cpp). Forward samples hold small integers, so
// every product and partial sum is exact in f32 (and the operands in bf16) and the JIT must match the
// reference bit for bit; tests/jit/matmul_test.cpp checks random values within
// the GEMM's error bound, the register tiles and cache blocks of each target,
// and infinities and nan.
#include <array>

#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {


Attrs flags(bool ta, bool tb) { return {{"transpose_a", ta}, {"transpose_b", tb}}; }

// The stored shape of an operand whose op() is rows x cols with batch dims in front.
Shape stored(const Shape& batch, int64_t rows, int64_t cols, bool transposed) {
  return concat_shapes(batch, transposed ? Shape{cols, rows} : Shape{rows, cols});
}

Sample product(Rng& rng, int64_t m, int64_t k, int64_t n, bool ta, bool tb, const Shape& a_batch = {},
               const Shape& b_batch = {}, std::string note = "", DType dtype = DType::f32) {
  return {random_operands(rng, {{dtype, stored(a_batch, m, k, ta)}, {dtype, stored(b_batch, k, n, tb)}},
                          Values::integers),
          flags(ta, tb),
          std::move(note)};
}

// Sizes off the vector widths with every flag, batch dims broadcast either
// way, empty products (k = 0 gives zeros), and one product large enough for
// several cache blocks and threads.
std::vector<Sample> matmul_samples(Rng& rng) {
  const std::vector<int64_t> dims = {1, 2, 3, 5, 7, 16, 17, 33};
  std::vector<Sample> out;
  for (int i = 0; i < 12; ++i)
    out.push_back(product(rng, rng.pick(dims), rng.pick(dims), rng.pick(dims), i & 1, i & 2));
  const std::vector<std::pair<Shape, Shape>> batches = {{{2, 1, 3}, {5, 1}}, {{4}, {}}, {{}, {3}}, {{1, 2}, {3, 1}}};
  for (const auto& [a, b] : batches) out.push_back(product(rng, 7, 13, 17, rng.coin(), rng.coin(), a, b));
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{{3, 0, 4}, {0, 5, 4}, {3, 5, 0}})
    out.push_back(product(rng, m, k, n, rng.coin(), rng.coin(), {}, {}, "size 0"));
  out.push_back(product(rng, 2, 3, 4, false, false, {0}, {1}, "size 0"));
  out.push_back(product(rng, 300, 257, 129, false, true, {}, {}, "large"));
  // bf16 operands (small integers: exact in bf16), widened as they are packed or, for few rows, as loaded.
  for (int i = 0; i < 8; ++i)
    out.push_back(product(rng, rng.pick(dims), rng.pick(dims), rng.pick(dims), i & 1, i & 2, {}, {}, "bf16",
                          DType::bf16));
  out.push_back(product(rng, 7, 13, 17, true, false, {2, 1}, {3}, "bf16", DType::bf16));
  out.push_back(product(rng, 300, 257, 129, false, false, {}, {}, "bf16, large", DType::bf16));
  return out;
}

// Square operands (a rule with a wrong flag still has the right shapes there,
// so only the values catch it), vectors as 1-row and 1-column matrices, batch
// dims and their broadcasting.
std::vector<Sample> matmul_grad_samples(Rng& rng) {
  struct Case {
    Shape a, b;
    bool ta, tb;
  };
  const std::vector<Case> cases = {
      {{3, 3}, {3, 3}, false, false},      {{3, 3}, {3, 3}, true, false},       {{3, 3}, {3, 3}, false, true},
      {{3, 3}, {3, 3}, true, true},        {{3, 4}, {4, 5}, false, false},      {{4, 3}, {5, 4}, true, true},
      {{1, 4}, {4, 1}, false, false},      {{4, 1}, {1, 4}, true, true},        {{2, 3, 4}, {2, 4, 5}, false, false},
      {{2, 2, 3, 2}, {2, 2, 2, 3}, false, false}, {{3, 4}, {2, 4, 5}, false, false}, {{2, 3, 4}, {4, 5}, false, false},
      {{1, 3, 4}, {2, 4, 5}, false, false}, {{2, 1, 3, 4}, {3, 5, 4}, false, true}, {{2, 4, 3}, {1, 2, 4, 5}, true, false},
      {{3, 1, 4, 3}, {2, 5, 4}, true, true}};
  std::vector<Sample> out;
  for (const Case& c : cases) out.push_back({{uniform(rng, c.a), uniform(rng, c.b)}, flags(c.ta, c.tb)});
  return out;
}

}  // namespace

std::vector<OpInfo> matmul_rows() {
  return {{.name = "matmul",
           .dtypes = {{DType::f32, DType::bf16}, {DType::f32, DType::bf16}},
           .samples = matmul_samples,
           .tolerance = kExact,
           .grad_samples = matmul_grad_samples,
           .invalid = {{{{DType::f32, {3}}, {DType::f32, {3, 2}}}},
                       {{{DType::f32, {2, 3}}, {DType::bf16, {3, 2}}}},
                       {{{DType::f32, {2, 3}}, {DType::f32, {4, 2}}}},
                       {{{DType::f32, {2, 3}}, {DType::f32, {3, 2}}}, flags(true, false)},
                       {{{DType::f32, {2, 2, 3}}, {DType::f32, {3, 3, 2}}}}}}};
}

}  // namespace kiln::test
