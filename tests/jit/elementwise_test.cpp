// Every elementwise op compiled alone against the interpreter, on random shapes
// (sizes off the vector widths, size-1 dims, scalars, broadcasts) and values.
// Tolerances: exact for everything IEEE defines exactly (arithmetic, sqrt, the
// comparisons, select, cast, pow through the same libm powf); exp, log and tanh
// within the bounds of compiler/codegen/fast_math.h plus std::'s own error.
#include <doctest/doctest.h>

#include <functional>
#include <limits>

#include "jit/differential.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr Tolerance kExact{0, 0};
constexpr int kShapes = 12;  // random shapes per op

void check_unary(const std::string& op, const std::vector<DType>& dtypes, Tolerance tol, Values values) {
  Rng rng(std::hash<std::string>{}(op));
  for (DType t : dtypes)
    for (int i = 0; i < kShapes; ++i) check_op(op, {{t, random_shape(rng)}}, {}, tol, rng, values);
}

// Operands broadcast against each other in both orders, and equal shapes.
void check_binary(const std::string& op, const std::vector<DType>& dtypes, Tolerance tol, Values values) {
  Rng rng(std::hash<std::string>{}(op));
  for (DType t : dtypes)
    for (int i = 0; i < kShapes; ++i) {
      const Shape a = random_shape(rng), b = i % 3 == 0 ? a : broadcast_partner(rng, a);
      if (i % 2) check_op(op, {{t, a}, {t, b}}, {}, tol, rng, values);
      else check_op(op, {{t, b}, {t, a}}, {}, tol, rng, values);
    }
}

}  // namespace

TEST_CASE("jit unary arithmetic matches the interpreter exactly") {
  check_unary("neg", {DType::f32, DType::i32}, kExact, Values::any);
  check_unary("relu", {DType::f32}, kExact, Values::any);
  check_unary("sqrt", {DType::f32}, kExact, Values::positive);
  check_unary("rsqrt", {DType::f32}, kExact, Values::positive);
  check_unary("logical_not", {DType::boolean}, kExact, Values::any);
}

TEST_CASE("jit exp log and tanh match the interpreter within their error bounds") {
  // 3 ulp relative (3 * 2^-23): fast_math.h's bounds (<= 1.5 ulp) plus std::'s own
  // error against the exact value; subnormal results absolutely.
  check_unary("exp", {DType::f32}, {1e-44, 3.6e-7}, Values::any);
  check_unary("log", {DType::f32}, {1e-44, 3.6e-7}, Values::positive);
  check_unary("tanh", {DType::f32}, {1e-44, 3.6e-7}, Values::any);
}

TEST_CASE("jit binary arithmetic with broadcasting matches the interpreter exactly") {
  for (const char* op : {"add", "sub", "mul", "maximum", "minimum"})
    check_binary(op, {DType::f32, DType::i32}, kExact, Values::any);
  check_binary("div", {DType::f32, DType::i32}, kExact, Values::nonzero);
  check_binary("pow", {DType::f32}, kExact, Values::positive);
  check_binary("logical_and", {DType::boolean}, kExact, Values::any);
  check_binary("logical_or", {DType::boolean}, kExact, Values::any);
}

TEST_CASE("jit comparisons match the interpreter") {
  for (const char* op : {"less", "less_equal", "greater", "greater_equal"})
    check_binary(op, {DType::f32, DType::i32}, kExact, Values::moderate);
  for (const char* op : {"equal", "not_equal"})
    check_binary(op, {DType::f32, DType::i32, DType::boolean}, kExact, Values::moderate);
}

TEST_CASE("jit select broadcasts all three operands") {
  Rng rng(7);
  for (DType t : {DType::f32, DType::i32, DType::boolean})
    for (int i = 0; i < kShapes; ++i) {
      const Shape s = random_shape(rng);
      std::vector<Shape> shapes = {broadcast_partner(rng, s), broadcast_partner(rng, s), s};
      std::swap(shapes[2], shapes[static_cast<size_t>(rng.uniform(0, 2))]);  // the full shape anywhere
      check_op("select", {{DType::boolean, shapes[0]}, {t, shapes[1]}, {t, shapes[2]}}, {}, kExact, rng);
    }
}

TEST_CASE("jit cast converts between every pair of dtypes like the reference") {
  Rng rng(11);
  for (DType from : {DType::f32, DType::i32, DType::boolean})
    for (DType to : {DType::f32, DType::i32, DType::boolean})
      for (int i = 0; i < 4; ++i) check_op("cast", {{from, random_shape(rng)}}, {{"dtype", to}}, kExact, rng);
}

TEST_CASE("jit float special values follow IEEE and the reference") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x(Tensor::F32{0.0f, -0.0f, inf, -inf, nan, 1e-40f, -1e-40f, 3e38f, -3e38f, 1.0f, 100.0f, -100.0f,
                             88.8f, -104.0f, 20.0f, -0.3f, 2.5e9f});
  for (const char* op : {"exp", "log", "tanh", "sqrt", "rsqrt", "relu", "neg"}) {
    INFO(op);
    const Graph g = one_op_graph(op, {x.type()});
    check_jit_matches_interpreter(g, {{"x0", x}}, {1e-44, 3.6e-7});
  }
  for (const char* op : {"maximum", "minimum", "less", "equal", "not_equal", "add", "mul", "div"}) {
    INFO(op);
    const Tensor y(Tensor::F32{nan, 0.0f, -inf, -inf, 1.0f, 0.0f, -0.0f, inf, 3e38f, nan, 0.0f, 0.0f, 1.0f, 2.0f,
                               -20.0f, 0.3f, -2.5e9f});
    check_jit_matches_interpreter(one_op_graph(op, {x.type(), y.type()}), {{"x0", x}, {"x1", y}}, kExact);
  }
  const Graph cast = one_op_graph("cast", {x.type()}, {{"dtype", DType::i32}});
  check_jit_matches_interpreter(cast, {{"x0", x}}, kExact);  // saturates, nan -> 0
}
