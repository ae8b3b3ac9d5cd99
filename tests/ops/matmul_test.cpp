#include <doctest/doctest.h>

#include "engine/interpreter.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/op_test_util.h"

using namespace kiln;
using kiln::test::build_error;
using kiln::test::check_close;
using kiln::test::result_types;
using kiln::test::run_op1;
using kiln::test::shaped;
using F = Tensor::F32;

namespace {
Attrs flags(bool ta, bool tb) { return {{"transpose_a", ta}, {"transpose_b", tb}}; }

const F kA = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};       // [2,3]
const F kAt = {{1.0f, 4.0f}, {2.0f, 5.0f}, {3.0f, 6.0f}};    // kA transposed
const F kB = {{7.0f, 8.0f}, {9.0f, 10.0f}, {11.0f, 12.0f}};  // [3,2]
const F kBt = {{7.0f, 9.0f, 11.0f}, {8.0f, 10.0f, 12.0f}};   // kB transposed
// kA @ kB by hand: [1*7+2*9+3*11, 1*8+2*10+3*12; 4*7+5*9+6*11, 4*8+5*10+6*12].
const F kAB = {{58.0f, 64.0f}, {139.0f, 154.0f}};
}  // namespace

TEST_CASE("matmul with every combination of transpose flags") {
  check_close(run_op1("matmul", {kA, kB}), kAB);
  check_close(run_op1("matmul", {kA, kB}, flags(false, false)), kAB);
  check_close(run_op1("matmul", {kAt, kB}, flags(true, false)), kAB);
  check_close(run_op1("matmul", {kA, kBt}, flags(false, true)), kAB);
  check_close(run_op1("matmul", {kAt, kBt}, flags(true, true)), kAB);
  // The other orientation: kB @ kA is [3,3].
  check_close(run_op1("matmul", {kBt, kAt}, flags(true, true)),
              F{{39.0f, 54.0f, 69.0f}, {49.0f, 68.0f, 87.0f}, {59.0f, 82.0f, 105.0f}});
}

TEST_CASE("matmul of a row by a column and of 1x1 matrices") {
  check_close(run_op1("matmul", {shaped<float>({1, 3}, {1, 2, 3}), shaped<float>({3, 1}, {4, 5, 6})}),
              shaped<float>({1, 1}, {32}));
  check_close(run_op1("matmul", {shaped<float>({3, 1}, {1, 2, 3}), shaped<float>({1, 2}, {10, -1})}),
              F{{10.0f, -1.0f}, {20.0f, -2.0f}, {30.0f, -3.0f}});
}

TEST_CASE("batched matmul broadcasts batch dims") {
  // a: batch [2,1] of 1x2 rows; b: batch [3] of 2x1 columns -> [2,3,1,1], entry (i,j) = a_i . b_j.
  const F a = shaped<float>({2, 1, 1, 2}, {1, 2, 3, 4});
  const F b = shaped<float>({3, 2, 1}, {1, 0, 0, 1, 1, 1});
  check_close(run_op1("matmul", {a, b}), shaped<float>({2, 3, 1, 1}, {1, 2, 3, 3, 4, 7}));
  // A rank-2 lhs is shared by every batch of the rhs; batch 1 swaps columns.
  const F m = {{1.0f, 2.0f}, {3.0f, 4.0f}};
  const F swaps = shaped<float>({2, 2, 2}, {1, 0, 0, 1, 0, 1, 1, 0});
  check_close(run_op1("matmul", {m, swaps}), shaped<float>({2, 2, 2}, {1, 2, 3, 4, 2, 1, 4, 3}));
  // With transpose_b per batch: m @ I and m @ m^T = [[5,11],[11,25]].
  const F rhs = shaped<float>({2, 2, 2}, {1, 0, 0, 1, 1, 2, 3, 4});
  check_close(run_op1("matmul", {m, rhs}, flags(false, true)), shaped<float>({2, 2, 2}, {1, 2, 3, 4, 5, 11, 11, 25}));
  // transpose_a on a batched lhs [m, I]: m^T @ m = [[10,14],[14,20]], then I @ m.
  const F lhs = shaped<float>({2, 2, 2}, {1, 2, 3, 4, 1, 0, 0, 1});
  check_close(run_op1("matmul", {lhs, m}, flags(true, false)), shaped<float>({2, 2, 2}, {10, 14, 14, 20, 1, 2, 3, 4}));
}

TEST_CASE("matmul infers batched shapes") {
  CHECK(result_types("matmul", {{DType::f32, {2, 1, 3, 4}}, {DType::f32, {5, 4, 6}}}) ==
        std::vector<TensorType>{{DType::f32, {2, 5, 3, 6}}});
  CHECK(result_types("matmul", {{DType::f32, {7, 4, 3}}, {DType::f32, {6, 4}}}, flags(true, true)) ==
        std::vector<TensorType>{{DType::f32, {7, 3, 6}}});
}

TEST_CASE("matmul inference errors name the op and the operand types") {
  CHECK(build_error("matmul", {{DType::f32, {2, 3}}, {DType::f32, {4, 5}}}) ==
        "matmul(f32[2,3], f32[4,5]): inner dimensions differ: 3 (operand 0) vs 4 (operand 1)");
  CHECK(build_error("matmul", {{DType::f32, {2, 3}}, {DType::f32, {2, 5}}}, flags(false, true)) ==
        "matmul(f32[2,3], f32[2,5]): inner dimensions differ: 3 (operand 0) vs 5 (operand 1)");
  CHECK(build_error("matmul", {{DType::f32, {2, 2, 3}}, {DType::f32, {3, 3, 4}}}) ==
        "matmul(f32[2,2,3], f32[3,3,4]): batch dims [2] and [3] do not broadcast");
  CHECK(build_error("matmul", {{DType::i32, {2, 2}}, {DType::i32, {2, 2}}}) ==
        "matmul(i32[2,2], i32[2,2]): operand 0 must be f32 or bf16, got i32");
  CHECK(build_error("matmul", {{DType::f32, {2, 2}}, {DType::bf16, {2, 2}}}) ==
        "matmul(f32[2,2], bf16[2,2]): operands are f32 and bf16: both f32 or both bf16");
  CHECK(build_error("matmul", {{DType::f32, {2, 2}}, {DType::f32, {2}}}) ==
        "matmul(f32[2,2], f32[2]): operand 1 must have at least rank 2, got rank 1");
}

TEST_CASE("matmul of bf16 operands gives f32: the f32 product of the widened operands") {
  CHECK(result_types("matmul", {{DType::bf16, {2, 3}}, {DType::bf16, {3, 4}}}) ==
        std::vector<TensorType>{{DType::f32, {2, 4}}});
  Graph g("mm");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 3}}), w = b.input("w", {DType::f32, {3, 2}});
  b.output(ops::matmul(b, ops::cast(b, x, DType::bf16), ops::cast(b, w, DType::bf16)));
  Interpreter interp(g);
  // 1 + 2^-9 rounds to 1 in bf16; 3.0 and 0.5 are exact.
  interp.bind("x", Tensor(Tensor::F32{{1.001953125f, 3.0f, 0.5f}, {2.0f, -1.0f, 0.0f}}));
  interp.bind("w", Tensor(Tensor::F32{{1.0f, 2.0f}, {0.5f, -1.0f}, {4.0f, 1.0f}}));
  interp.run();
  CHECK(interp.output(interp.output_names().at(0)).f32() == Tensor::F32{{4.5f, -0.5f}, {1.5f, 5.0f}});
}

TEST_CASE("matmul builder helper passes the flags") {
  Graph g("mm");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 3}});
  const Value w = b.param("w", {DType::f32, {2, 3}});
  const Value y = ops::matmul(b, x, w, false, true);
  b.output(y);
  CHECK(g.type(y) == TensorType{DType::f32, {2, 2}});
  Interpreter interp(std::move(g));
  interp.bind("x", Tensor(kA));
  interp.bind("w", Tensor(kA));
  interp.run();
  // kA @ kA^T = [[14, 32], [32, 77]].
  check_close(interp.output(interp.graph().name_of(y)), F{{14.0f, 32.0f}, {32.0f, 77.0f}});
}
