#include <doctest/doctest.h>

#include "ops/op_test_util.h"
#include "ops/shape_ops.h"

using namespace kiln;
using kiln::test::build_error;
using kiln::test::check_equal;
using kiln::test::run_op1;
using kiln::test::shaped;

namespace {
const Tensor::F32 k2x3 = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
}

TEST_CASE("reshape keeps row-major order and infers one -1") {
  check_equal(run_op1("reshape", {k2x3}, {{"shape", Shape{3, -1}}}),
              Tensor::F32{{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}});
  check_equal(run_op1("reshape", {k2x3}, {{"shape", Shape{6}}}), Tensor::F32{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
  check_equal(run_op1("reshape", {shaped<int32_t>({2, 1}, {7, 8})}, {{"shape", Shape{-1}}}), Tensor::I32{7, 8});
  check_equal(run_op1("reshape", {Tensor::Bool{true, false}}, {{"shape", Shape{2, 1}}}),
              shaped<bool>({2, 1}, {true, false}));
}

TEST_CASE("reshape between scalars and one-element tensors") {
  check_equal(run_op1("reshape", {Tensor::F32(4.5f)}, {{"shape", Shape{1, 1}}}), shaped<float>({1, 1}, {4.5f}));
  check_equal(run_op1("reshape", {Tensor::F32{4.5f}}, {{"shape", Shape{}}}), Tensor::F32(4.5f));
}

TEST_CASE("reshape rejects element-count mismatches and bad -1s") {
  const TensorType x = {DType::f32, {2, 3}};
  CHECK(build_error("reshape", {x}, {{"shape", Shape{4, 2}}}) ==
        "reshape(f32[2,3]): cannot reshape 6 elements into shape [4,2] (8 elements)");
  CHECK(build_error("reshape", {x}, {{"shape", Shape{4, -1}}}) ==
        "reshape(f32[2,3]): cannot reshape 6 elements into shape [4,-1]");
  CHECK(build_error("reshape", {x}, {{"shape", Shape{-1, -1}}}) ==
        "reshape(f32[2,3]): shape [-1,-1] has more than one -1");
  CHECK(build_error("reshape", {x}, {{"shape", Shape{-2, -3}}}) ==
        "reshape(f32[2,3]): shape [-2,-3] may only use -1 as a negative dim");
  CHECK(build_error("reshape", {x}) == "reshape(f32[2,3]): op 'reshape' requires attribute 'shape' (int list)");
}

TEST_CASE("transpose permutes axes") {
  check_equal(run_op1("transpose", {k2x3}, {{"perm", std::vector<int64_t>{1, 0}}}),
              Tensor::F32{{1.0f, 4.0f}, {2.0f, 5.0f}, {3.0f, 6.0f}});
  // x[i,j,k] = 100i + 10j + k with shape [2,2,3]; y = transpose(x, [2,0,1]) has
  // y[k,i,j] = x[i,j,k], shape [3,2,2].
  const Tensor::I32 x = {{{0, 1, 2}, {10, 11, 12}}, {{100, 101, 102}, {110, 111, 112}}};
  check_equal(run_op1("transpose", {x}, {{"perm", std::vector<int64_t>{2, 0, 1}}}),
              Tensor::I32{{{0, 10}, {100, 110}}, {{1, 11}, {101, 111}}, {{2, 12}, {102, 112}}});
  check_equal(run_op1("transpose", {Tensor::F32(3.0f)}, {{"perm", std::vector<int64_t>{}}}), Tensor::F32(3.0f));
}

TEST_CASE("transpose rejects anything but a permutation of the axes") {
  const TensorType x = {DType::f32, {2, 3}};
  CHECK(build_error("transpose", {x}, {{"perm", std::vector<int64_t>{0, 0}}}) ==
        "transpose(f32[2,3]): perm [0,0] is not a permutation of the operand's 2 axes");
  CHECK(build_error("transpose", {x}, {{"perm", std::vector<int64_t>{1, 0, 2}}}) ==
        "transpose(f32[2,3]): perm [1,0,2] is not a permutation of the operand's 2 axes");
  CHECK(build_error("transpose", {x}, {{"perm", std::vector<int64_t>{-1, 0}}}) ==
        "transpose(f32[2,3]): perm [-1,0] is not a permutation of the operand's 2 axes");
}

TEST_CASE("broadcast follows np.broadcast_to") {
  check_equal(run_op1("broadcast", {Tensor::F32{1.0f, 2.0f, 3.0f}}, {{"shape", Shape{2, 3}}}),
              Tensor::F32{{1.0f, 2.0f, 3.0f}, {1.0f, 2.0f, 3.0f}});
  check_equal(run_op1("broadcast", {shaped<int32_t>({2, 1}, {1, 2})}, {{"shape", Shape{2, 3}}}),
              Tensor::I32{{1, 1, 1}, {2, 2, 2}});
  check_equal(run_op1("broadcast", {Tensor::Bool(true)}, {{"shape", Shape{2}}}), Tensor::Bool{true, true});
  check_equal(run_op1("broadcast", {k2x3}, {{"shape", Shape{1, 2, 3}}}),
              shaped<float>({1, 2, 3}, {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}));
}

TEST_CASE("broadcast rejects incompatible targets") {
  CHECK(build_error("broadcast", {{DType::f32, {2, 3}}}, {{"shape", Shape{3, 3}}}) ==
        "broadcast(f32[2,3]): cannot broadcast shape [2,3] to [3,3]");
  CHECK(build_error("broadcast", {{DType::f32, {2, 3}}}, {{"shape", Shape{3}}}) ==
        "broadcast(f32[2,3]): cannot broadcast shape [2,3] to [3]");
  CHECK(build_error("broadcast", {{DType::f32, {1}}}, {{"shape", Shape{-2}}}) ==
        "broadcast(f32[1]): shape must not have negative dims, got [-2]");
}

namespace {
Attrs slice_attrs(std::vector<int64_t> axes, std::vector<int64_t> starts, std::vector<int64_t> ends) {
  return {{"axes", std::move(axes)}, {"starts", std::move(starts)}, {"ends", std::move(ends)}};
}
// x[i,j] = 10i + j, shape [3,4].
const Tensor::I32 k3x4 = {{0, 1, 2, 3}, {10, 11, 12, 13}, {20, 21, 22, 23}};
}  // namespace

TEST_CASE("slice selects start to end per axis with Python bounds") {
  check_equal(run_op1("slice", {k3x4}, slice_attrs({1}, {1}, {3})), Tensor::I32{{1, 2}, {11, 12}, {21, 22}});
  // Negative bounds count from the end: columns -3..-1 are 1 and 2, rows -1.. is row 2.
  check_equal(run_op1("slice", {k3x4}, slice_attrs({1, 0}, {-3, -1}, {-1, 3})), shaped<int32_t>({1, 2}, {21, 22}));
  // Negative axis, and bounds beyond the dim are clamped.
  check_equal(run_op1("slice", {k3x4}, slice_attrs({-2}, {-100}, {100})), k3x4);
  check_equal(run_op1("slice", {k3x4}, slice_attrs({0}, {2}, {100})), shaped<int32_t>({1, 4}, {20, 21, 22, 23}));
  check_equal(run_op1("slice", {Tensor::F32{5.0f, 6.0f, 7.0f, 8.0f}}, slice_attrs({0}, {1}, {-1})),
              Tensor::F32{6.0f, 7.0f});
  check_equal(run_op1("slice", {Tensor::F32(2.0f)}, slice_attrs({}, {}, {})), Tensor::F32(2.0f));
}

TEST_CASE("slice rejects empty results and repeated axes and mismatched lists") {
  const TensorType x = {DType::i32, {3, 4}};
  CHECK(build_error("slice", {x}, slice_attrs({1}, {3}, {2})) ==
        "slice(i32[3,4]): slice [3:2] of axis 1 (dim 4) is empty");
  CHECK(build_error("slice", {x}, slice_attrs({0}, {5}, {9})) ==
        "slice(i32[3,4]): slice [5:9] of axis 0 (dim 3) is empty");
  CHECK(build_error("slice", {x}, slice_attrs({1, -1}, {0, 0}, {1, 1})) ==
        "slice(i32[3,4]): duplicate axis -1 in [1,-1] for rank 2");
  CHECK(build_error("slice", {x}, slice_attrs({2}, {0}, {1})) == "slice(i32[3,4]): axis 2 is out of range for rank 2");
  CHECK(build_error("slice", {x}, slice_attrs({0, 1}, {0}, {1, 1})) ==
        "slice(i32[3,4]): axes, starts and ends must have equal lengths, got 2, 1 and 2");
}

TEST_CASE("concat joins along each axis") {
  const Tensor::F32 b = shaped<float>({1, 3}, {7.0f, 8.0f, 9.0f});
  check_equal(run_op1("concat", {k2x3, b}, {{"axis", int64_t{0}}}),
              Tensor::F32{{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}, {7.0f, 8.0f, 9.0f}});
  const Tensor::F32 c = shaped<float>({2, 1}, {7.0f, 8.0f});
  check_equal(run_op1("concat", {k2x3, c, k2x3}, {{"axis", int64_t{1}}}),
              shaped<float>({2, 7}, {1, 2, 3, 7, 1, 2, 3, 4, 5, 6, 8, 4, 5, 6}));
  check_equal(run_op1("concat", {k2x3, c}, {{"axis", int64_t{-1}}}), shaped<float>({2, 4}, {1, 2, 3, 7, 4, 5, 6, 8}));
  check_equal(run_op1("concat", {Tensor::I32{1}, Tensor::I32{2, 3}}, {{"axis", int64_t{0}}}), Tensor::I32{1, 2, 3});
  check_equal(run_op1("concat", {Tensor::Bool{true}}, {{"axis", int64_t{0}}}), Tensor::Bool{true});
  // The middle axis of a rank-3 tensor.
  const Tensor::I32 p = shaped<int32_t>({2, 1, 2}, {1, 2, 3, 4}), q = {{{5, 6}, {7, 8}}, {{9, 10}, {11, 12}}};
  check_equal(run_op1("concat", {p, q}, {{"axis", int64_t{1}}}),
              Tensor::I32{{{1, 2}, {5, 6}, {7, 8}}, {{3, 4}, {9, 10}, {11, 12}}});
}

TEST_CASE("concat rejects mismatched shapes and dtypes and scalars") {
  CHECK(build_error("concat", {{DType::f32, {2, 3}}, {DType::f32, {2, 4}}}, {{"axis", int64_t{0}}}) ==
        "concat(f32[2,3], f32[2,4]): operand 1 has shape [2,4], which differs from operand 0's [2,3] outside axis 0");
  CHECK(build_error("concat", {{DType::f32, {2, 3}}, {DType::f32, {2, 3, 1}}}, {{"axis", int64_t{1}}}) ==
        "concat(f32[2,3], f32[2,3,1]): operand 1 has shape [2,3,1], which differs from operand 0's [2,3] outside "
        "axis 1");
  CHECK(build_error("concat", {{DType::f32, {2}}, {DType::i32, {2}}}, {{"axis", int64_t{0}}}) ==
        "concat(f32[2], i32[2]): operands must have the same dtype, got f32 and i32");
  CHECK(build_error("concat", {{DType::f32, {}}}, {{"axis", int64_t{0}}}) ==
        "concat(f32[]): operand 0 must have at least rank 1, got rank 0");
  CHECK(build_error("concat", {}, {{"axis", int64_t{0}}}) == "concat(): expects at least 1 operand(s), got 0");
  const int64_t big = int64_t{1} << 62;
  CHECK(build_error("concat", {{DType::f32, {big}}, {DType::f32, {big}}, {DType::f32, {big}}}, {{"axis", int64_t{0}}})
            .find("overflows int64") != std::string::npos);
}

TEST_CASE("shape op builder helpers chain") {
  Graph g("helpers");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 3}});
  const Value t = ops::transpose(b, x, {1, 0});     // [3,2]
  const Value r = ops::reshape(b, t, {-1});         // [6]
  const Value s = ops::slice(b, r, {0}, {1}, {4});  // [3]
  const Value c = ops::concat(b, {s, s}, 0);        // [6]
  const Value y = ops::broadcast(b, ops::reshape(b, c, {2, 3}), {2, 2, 3});
  b.output(y);
  CHECK(g.type(y) == TensorType{DType::f32, {2, 2, 3}});
  Interpreter interp(std::move(g));
  interp.bind("x", Tensor(k2x3));
  interp.run();
  // transpose: 1 4 2 5 3 6; slice [1:4]: 4 2 5; concat twice, reshape, broadcast.
  check_equal(interp.output(interp.graph().name_of(y)), shaped<float>({2, 2, 3}, {4, 2, 5, 4, 2, 5, 4, 2, 5, 4, 2, 5}));
}
