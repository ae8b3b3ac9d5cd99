#include <doctest/doctest.h>

#include "ops/gather.h"
#include "ops/op_test_util.h"

using namespace kiln;
using kiln::test::build_error;
using kiln::test::check_equal;
using kiln::test::run_op1;
using kiln::test::shaped;
using F = Tensor::F32;
using I = Tensor::I32;

namespace {
const F kTable = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}};  // 3 rows of 2
Attrs axis(int64_t a) { return {{"axis", a}}; }
}  // namespace

TEST_CASE("gather along axis 0 looks up rows (embedding)") {
  check_equal(run_op1("gather", {kTable, I{2, 0, 2}}), F{{5.0f, 6.0f}, {1.0f, 2.0f}, {5.0f, 6.0f}});
  // Indices of rank 2 put their shape in the middle: [2,2] + [2] -> [2,2,2].
  check_equal(run_op1("gather", {kTable, I{{0, 1}, {2, 2}}}, axis(0)),
              shaped<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 5, 6}));
  // A scalar index drops the axis.
  check_equal(run_op1("gather", {kTable, I(1)}), F{3.0f, 4.0f});
  check_equal(run_op1("gather", {I{10, 20, 30}, I{2, 2, 1}}), I{30, 30, 20});
  check_equal(run_op1("gather", {Tensor::Bool{true, false}, I{1, 0, 1}}), Tensor::Bool{false, true, false});
}

TEST_CASE("gather along axis 1 takes columns") {
  const F t = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
  check_equal(run_op1("gather", {t, I{2, 0}}, axis(1)), F{{3.0f, 1.0f}, {6.0f, 4.0f}});
  check_equal(run_op1("gather", {t, I{2, 0}}, axis(-1)), F{{3.0f, 1.0f}, {6.0f, 4.0f}});
  // table[i,j,0] = 10i + j, shape [2,3,1]; indices [[2],[0]] -> [2] + [2,1] + [1].
  const I t3 = shaped<int32_t>({2, 3, 1}, {0, 1, 2, 10, 11, 12});
  check_equal(run_op1("gather", {t3, shaped<int32_t>({2, 1}, {2, 0})}, axis(1)),
              shaped<int32_t>({2, 2, 1, 1}, {2, 0, 12, 10}));
}

TEST_CASE("gather with an out-of-range index is a run-time error naming index and bound") {
  CHECK_THROWS_WITH_AS(run_op1("gather", {kTable, I{0, 3}}),
                       "gather: index 3 (at flat position 1 of the indices) is out of range [0, 3) for axis 0", Error);
  CHECK_THROWS_WITH_AS(run_op1("gather", {kTable, I{-1}}),
                       "gather: index -1 (at flat position 0 of the indices) is out of range [0, 3) for axis 0", Error);
  CHECK_THROWS_WITH_AS(run_op1("gather", {kTable, I{2}}, axis(1)),
                       "gather: index 2 (at flat position 0 of the indices) is out of range [0, 2) for axis 1", Error);
}

TEST_CASE("gather inference errors") {
  CHECK(build_error("gather", {{DType::f32, {3, 2}}, {DType::f32, {2}}}) ==
        "gather(f32[3,2], f32[2]): indices must be i32, got f32");
  CHECK(build_error("gather", {{DType::f32, {3, 2}}, {DType::i32, {2}}}, axis(2)) ==
        "gather(f32[3,2], i32[2]): axis 2 is out of range for rank 2");
  CHECK(build_error("gather", {{DType::f32, {}}, {DType::i32, {2}}}) ==
        "gather(f32[], i32[2]): table must have at least rank 1, got rank 0");
}

TEST_CASE("gather builder helper: embedding of token ids") {
  Graph g("embed");
  Builder b(g);
  const Value table = b.param("table", {DType::f32, {3, 2}});
  const Value ids = b.input("ids", {DType::i32, {2, 2}});
  const Value y = ops::gather(b, table, ids);
  b.output(y);
  CHECK(g.type(y) == TensorType{DType::f32, {2, 2, 2}});
  Interpreter interp(std::move(g));
  interp.bind("table", Tensor(kTable));
  interp.bind("ids", Tensor(I{{1, 1}, {0, 2}}));
  interp.run();
  check_equal(interp.output(interp.graph().name_of(y)), shaped<float>({2, 2, 2}, {3, 4, 3, 4, 1, 2, 5, 6}));
}

// ---- scatter_add: gather's adjoint ----

namespace {
Attrs scatter(int64_t size, int64_t a = 0) { return {{"axis", a}, {"size", size}}; }
}  // namespace

TEST_CASE("scatter_add along axis 0 adds rows at their indices and repeated indices accumulate") {
  const F updates = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}};
  // Row 2 receives rows 0 and 2 of updates, row 0 receives row 1, row 1 nothing.
  check_equal(run_op1("scatter_add", {updates, I{2, 0, 2}}, scatter(3)), F{{3.0f, 4.0f}, {0.0f, 0.0f}, {6.0f, 8.0f}});
  // A larger table than the indices reach: the extra rows stay zero.
  check_equal(run_op1("scatter_add", {updates, I{1, 1, 1}}, scatter(4)),
              F{{0.0f, 0.0f}, {9.0f, 12.0f}, {0.0f, 0.0f}, {0.0f, 0.0f}});
  check_equal(run_op1("scatter_add", {I{10, 20, 30}, I{0, 1, 0}}, scatter(2)), I{40, 20});
}

TEST_CASE("scatter_add takes rank-2 and scalar indices in gather's result layout") {
  // updates [2,2,2] = indices [2,2] + row [2]: rows 1..4 go to 0, 1, 2, 2.
  check_equal(
      run_op1("scatter_add", {shaped<float>({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), I{{0, 1}, {2, 2}}}, scatter(3)),
      F{{1.0f, 2.0f}, {3.0f, 4.0f}, {12.0f, 14.0f}});
  // A scalar index adds the axis back.
  check_equal(run_op1("scatter_add", {F{3.0f, 4.0f}, I(1)}, scatter(3)), F{{0.0f, 0.0f}, {3.0f, 4.0f}, {0.0f, 0.0f}});
}

TEST_CASE("scatter_add along axis 1 adds columns") {
  const F updates = {{1.0f, 2.0f}, {3.0f, 4.0f}};
  check_equal(run_op1("scatter_add", {updates, I{2, 0}}, scatter(3, 1)), F{{2.0f, 0.0f, 1.0f}, {4.0f, 0.0f, 3.0f}});
  check_equal(run_op1("scatter_add", {updates, I{1, 1}}, scatter(3, -1)), F{{0.0f, 3.0f, 0.0f}, {0.0f, 7.0f, 0.0f}});
  // updates [2,2,1] = [2] + indices [2] + [1] into a table [2,3,1].
  check_equal(run_op1("scatter_add", {shaped<int32_t>({2, 2, 1}, {1, 2, 3, 4}), I{2, 2}}, scatter(3, 1)),
              shaped<int32_t>({2, 3, 1}, {0, 0, 3, 0, 0, 7}));
}

TEST_CASE("scatter_add with no indices gives a zero table") {
  check_equal(run_op1("scatter_add", {F::from_shape({0, 2}), I::from_shape({0})}, scatter(2)),
              F{{0.0f, 0.0f}, {0.0f, 0.0f}});
}

TEST_CASE("scatter_add undoes the row selection of gather: gather then scatter_add counts each row") {
  // scatter_add(gather(t, idx), idx)[r] = t[r] * (number of times r occurs in idx).
  const Tensor rows = run_op1("gather", {kTable, I{2, 0, 2}});
  check_equal(run_op1("scatter_add", {rows, I{2, 0, 2}}, scatter(3)), F{{1.0f, 2.0f}, {0.0f, 0.0f}, {10.0f, 12.0f}});
}

TEST_CASE("scatter_add with an out-of-range index is a run-time error naming index and bound") {
  CHECK_THROWS_WITH_AS(run_op1("scatter_add", {F{1.0f, 2.0f}, I{0, 3}}, scatter(3)),
                       "scatter_add: index 3 (at flat position 1 of the indices) is out of range [0, 3) for axis 0",
                       Error);
  CHECK_THROWS_WITH_AS(run_op1("scatter_add", {F{1.0f, 2.0f}, I{0, -1}}, scatter(3)),
                       "scatter_add: index -1 (at flat position 1 of the indices) is out of range [0, 3) for axis 0",
                       Error);
  CHECK_THROWS_WITH_AS(run_op1("scatter_add", {F{{1.0f, 2.0f}}, I{0, 2}}, scatter(2, 1)),
                       "scatter_add: index 2 (at flat position 1 of the indices) is out of range [0, 2) for axis 1",
                       Error);
}

TEST_CASE("scatter_add inference errors") {
  CHECK(build_error("scatter_add", {{DType::f32, {3, 2}}, {DType::f32, {3}}}, scatter(4)) ==
        "scatter_add(f32[3,2], f32[3]): indices must be i32, got f32");
  CHECK(build_error("scatter_add", {{DType::boolean, {3}}, {DType::i32, {3}}}, scatter(4)) ==
        "scatter_add(bool[3], i32[3]): updates must be f32 or i32, got bool");
  CHECK(build_error("scatter_add", {{DType::f32, {3, 2}}, {DType::i32, {3}}}, scatter(-1)) ==
        "scatter_add(f32[3,2], i32[3]): size must be non-negative, got -1");
  CHECK(build_error("scatter_add", {{DType::f32, {3}}, {DType::i32, {3, 1}}}, scatter(4)) ==
        "scatter_add(f32[3], i32[3,1]): updates (rank 1) must have at least the rank of the indices (2)");
  CHECK(build_error("scatter_add", {{DType::f32, {3, 2}}, {DType::i32, {2}}}, scatter(4)) ==
        "scatter_add(f32[3,2], i32[2]): updates must have the indices' shape [2] from axis 0 (the layout of "
        "gather's result), got [3,2]");
  CHECK(build_error("scatter_add", {{DType::f32, {3, 2}}, {DType::i32, {3}}}, scatter(4, 2)) ==
        "scatter_add(f32[3,2], i32[3]): axis 2 is out of range for rank 2");
  CHECK(build_error("scatter_add", {{DType::f32, {3, 2}}, {DType::i32, {3}}}) ==
        "scatter_add(f32[3,2], i32[3]): op 'scatter_add' requires attribute 'size' (int)");
}

TEST_CASE("scatter_add builder helper: result type and values") {
  Graph g("scatter");
  Builder b(g);
  const Value updates = b.input("updates", {DType::f32, {2, 2, 3}});
  const Value ids = b.input("ids", {DType::i32, {2}});
  const Value y = ops::scatter_add(b, updates, ids, 4, 1);
  b.output(y);
  CHECK(g.type(y) == TensorType{DType::f32, {2, 4, 3}});
  Interpreter interp(std::move(g));
  interp.bind("updates", Tensor(shaped<float>({2, 2, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})));
  interp.bind("ids", Tensor(I{3, 0}));
  interp.run();
  check_equal(interp.output(interp.graph().name_of(y)),
              shaped<float>({2, 4, 3}, {4, 5, 6, 0, 0, 0, 0, 0, 0, 1, 2, 3, 10, 11, 12, 0, 0, 0, 0, 0, 0, 7, 8, 9}));
}
