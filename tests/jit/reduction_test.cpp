// sum, mean and max over every subset of axes, with and without keepdims.
// Tolerances: max and i32 sums are exact; f32 sums accumulate in f32 in the JIT
// (double in the reference), so they get abs 1e-5 + rel 1e-5 on values of order 1
// summed over at most a few thousand elements.
#include <doctest/doctest.h>

#include "engine/ir/builder.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr Tolerance kExact{0, 0};
constexpr Tolerance kSum{1e-5, 1e-5};

// All five reductions of one axes/keepdims choice in one graph (one compile).
// The i32 results compare exactly whatever the tolerance; f32 max picks elements,
// so any mistake there is far outside kSum.
void check_reductions(Rng& rng, const Shape& s, const std::vector<int64_t>& axes, bool keepdims) {
  Graph g("reductions");
  Builder b(g);
  const Value xf = b.input("xf", {DType::f32, s});
  const Value xi = b.input("xi", {DType::i32, s});
  const Attrs attrs{{"axes", axes}, {"keepdims", keepdims}};
  for (const char* op : {"sum", "mean", "max"}) b.output(b.emit1(op, {xf}, attrs));
  for (const char* op : {"sum", "max"}) b.output(b.emit1(op, {xi}, attrs));
  INFO(print_kir(g));
  check_jit_matches_interpreter(g, random_bindings(g, rng, Values::moderate), kSum);
}

void check_every_axis_subset(Rng& rng, const Shape& s) {
  const auto rank = static_cast<int64_t>(s.size());
  for (int64_t mask = 0; mask < (int64_t{1} << rank); ++mask) {
    std::vector<int64_t> axes;
    for (int64_t k = 0; k < rank; ++k)
      if (mask >> k & 1) axes.push_back(rng.coin() ? k : k - rank);  // negative axes too
    check_reductions(rng, s, axes, rng.coin());  // keepdims either way: it changes no loop
  }
}

}  // namespace

TEST_CASE("jit reductions over every subset of axes") {
  Rng rng(21);
  for (const Shape& s : std::vector<Shape>{{}, {1}, {17}, {40}, {3, 33}, {33, 3}, {16, 1}, {2, 5, 17}, {7, 1, 16, 3}})
    check_every_axis_subset(rng, s);
}

TEST_CASE("jit reductions of zero-size axes give the reference's identity results") {
  Rng rng(22);
  for (const char* op : {"sum", "mean"}) {
    check_op(op, {{DType::f32, {0, 3}}}, {{"axes", std::vector<int64_t>{0}}}, kExact, rng);
    check_op(op, {{DType::f32, {3, 0}}}, {{"axes", std::vector<int64_t>{1}}}, kExact, rng);
    check_op(op, {{DType::f32, {3, 0}}}, {{"axes", std::vector<int64_t>{0}}}, kExact, rng);
  }
}

TEST_CASE("jit large reductions run in parallel and stay accurate") {
  Rng rng(23);
  const Tolerance large{1e-4, 1e-5};
  check_op("sum", {{DType::f32, {3000, 700}}}, {{"axes", std::vector<int64_t>{1}}}, large, rng, Values::moderate);
  check_op("sum", {{DType::f32, {700, 3000}}}, {{"axes", std::vector<int64_t>{0}}}, large, rng, Values::moderate);
  check_op("mean", {{DType::f32, {64, 100, 50}}}, {{"axes", std::vector<int64_t>{0, 2}}}, large, rng,
           Values::moderate);
  check_op("max", {{DType::f32, {1000, 999}}}, {}, kExact, rng);
  check_op("sum", {{DType::i32, {1000, 999}}}, {}, kExact, rng);
}
