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
