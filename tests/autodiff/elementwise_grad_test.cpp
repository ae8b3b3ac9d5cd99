// Gradient rules of the elementwise ops: finite-difference checks over shapes and
// broadcasting, exact values at kinks and ties, and grad of grad.
#include <doctest/doctest.h>

#include <xtensor/xmath.hpp>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"

using namespace kiln;
using test::check_gradients;
using test::GradCheckOptions;
using test::random_tensor;
using F = xt::xarray<float>;

namespace {

using Unary = Value (*)(Builder&, Value);
using Binary = Value (*)(Builder&, Value, Value);
using GraphFn = std::function<Value(Builder&, const std::vector<Value>&)>;

const std::vector<Shape> kShapes = {{}, {5}, {2, 3}, {2, 1, 4}};

// Operand shape pairs: equal, rank mismatch either way, size-1 dims on both
// sides, scalars, and both at once.
const std::vector<std::pair<Shape, Shape>> kBroadcastPairs = {
    {{2, 3}, {2, 3}}, {{2, 3}, {3}}, {{3}, {2, 3}}, {{2, 1}, {1, 3}}, {{}, {2, 3}}, {{2, 3}, {}}, {{4, 1, 3}, {2, 1}}};

// Values with |x| in [margin, margin + 1), random signs.
Tensor away_from_zero(const Shape& s, uint64_t seed, float margin) {
  const F t = random_tensor(s, seed).f32();
  return Tensor(F(xt::where(t >= 0.0f, t + margin, t - margin)));
}

// Values 0.4 * k + offset + noise (|noise| <= 0.05) for integers k: two such
// tensors with offsets 0 and 0.2 differ by at least 0.1 everywhere, far from
// the ties of maximum/minimum at the finite-difference step.
Tensor on_grid(const Shape& s, uint64_t seed, float offset) {
  const F k = xt::floor(random_tensor(s, seed, -3.0f, 3.0f).f32());
  return Tensor(F(k * 0.4f + offset + random_tensor(s, seed + 100, -0.05f, 0.05f).f32()));
}

Tensor mask_tensor(const Shape& s, uint64_t seed) {
  return Tensor(xt::xarray<bool>(random_tensor(s, seed).f32() > 0.0f));
}

void check_unary(Unary op, float lo, float hi) {
  uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    INFO("shape ", shape_str(s));
    check_gradients([op](Builder& b, const std::vector<Value>& in) { return op(b, in[0]); },
                    {random_tensor(s, seed++, lo, hi)});
  }
}

// Checks op over every broadcast pair with operands made by make_x and make_y.
template <class MakeX, class MakeY>
void check_binary(Binary op, MakeX make_x, MakeY make_y) {
  uint64_t seed = 1;
  for (const auto& [sx, sy] : kBroadcastPairs) {
    INFO("shapes ", shape_str(sx), " and ", shape_str(sy));
    check_gradients([op](Builder& b, const std::vector<Value>& in) { return op(b, in[0], in[1]); },
                    {make_x(sx, seed), make_y(sy, seed + 1)});
    seed += 2;
  }
}

Tensor uniform(const Shape& s, uint64_t seed) { return random_tensor(s, seed); }

// Gradients of sum(f(inputs)) with respect to each f32 input, computed by the
// interpreter (for exact expected values at kinks and ties).
std::vector<F> gradients_of_sum(const GraphFn& f, const std::vector<Tensor>& values) {
  Graph g;
  Builder b(g);
  std::vector<Value> inputs, wrt;
  for (const Tensor& v : values) {
    inputs.push_back(b.input(g.fresh_name("x"), v.type()));
    if (v.dtype() == DType::f32) wrt.push_back(inputs.back());
  }
  const std::vector<Value> grads = grad(g, ops::sum(b, f(b, inputs)), wrt);
  for (Value v : grads) b.output(v);
  Interpreter exe(g);
  for (size_t i = 0; i < values.size(); ++i) exe.bind(g.name_of(inputs[i]), values[i]);
  exe.run();
  std::vector<F> out;
  for (Value v : grads) out.push_back(exe.output(g.name_of(v)).f32());
  return out;
}

// f(inputs) = d/d inputs[0] of sum(op(inputs)): checking its gradient by finite
// differences checks the second derivative, i.e. the rules of the rule's ops.
GraphFn first_derivative(const GraphFn& op) {
  return [op](Builder& b, const std::vector<Value>& in) { return grad(b.graph(), ops::sum(b, op(b, in)), {in[0]})[0]; };
}

}  // namespace

TEST_CASE("unary gradients by finite differences") {
  SUBCASE("neg") { check_unary(ops::neg, -1.0f, 1.0f); }
  SUBCASE("exp") { check_unary(ops::exp, -1.0f, 1.0f); }
  SUBCASE("tanh") { check_unary(ops::tanh, -2.0f, 2.0f); }
  SUBCASE("log") { check_unary(ops::log, 0.5f, 2.0f); }
  SUBCASE("sqrt") { check_unary(ops::sqrt, 0.5f, 2.0f); }
  SUBCASE("rsqrt") { check_unary(ops::rsqrt, 0.5f, 2.0f); }
}

TEST_CASE("relu gradient by finite differences away from the kink") {
  uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    INFO("shape ", shape_str(s));
    check_gradients([](Builder& b, const std::vector<Value>& in) { return ops::relu(b, in[0]); },
                    {away_from_zero(s, seed++, 0.1f)});
  }
}

TEST_CASE("relu gradient is 0 at the kink") {
  const auto g = gradients_of_sum([](Builder& b, const std::vector<Value>& in) { return ops::relu(b, in[0]); },
                                  {Tensor(F{-1.0f, 0.0f, 2.0f})});
  CHECK(g[0] == F{0.0f, 0.0f, 1.0f});
}

TEST_CASE("add sub mul gradients with broadcasting") {
  SUBCASE("add") { check_binary(ops::add, uniform, uniform); }
  SUBCASE("sub") { check_binary(ops::sub, uniform, uniform); }
  SUBCASE("mul") { check_binary(ops::mul, uniform, uniform); }
}

TEST_CASE("div gradients with broadcasting") {
  check_binary(ops::div, uniform, [](const Shape& s, uint64_t seed) { return away_from_zero(s, seed, 0.5f); });
}

TEST_CASE("pow gradients with broadcasting for a positive base") {
  check_binary(
      ops::pow, [](const Shape& s, uint64_t seed) { return random_tensor(s, seed, 0.5f, 2.0f); },
      [](const Shape& s, uint64_t seed) { return random_tensor(s, seed, -1.5f, 1.5f); });
}

TEST_CASE("pow base gradient for a negative base and integer exponents") {
  // d/dx x^y = y x^(y-1) also holds here; the exponent's gradient (log x) does not, so it is held constant.
  GradCheckOptions opts;
  opts.constant = {1};
  for (float y : {2.0f, 3.0f}) {
    INFO("exponent ", y);
    check_gradients([](Builder& b, const std::vector<Value>& in) { return ops::pow(b, in[0], in[1]); },
                    {random_tensor({2, 3}, 7, -2.0f, -0.5f), Tensor::scalar(y)}, opts);
  }
}

TEST_CASE("pow gradients at exact values") {
  // x^y at x = 2, y = 3: d/dx = 3 * 4 = 12, d/dy = 8 ln 2.
  const auto g = gradients_of_sum([](Builder& b, const std::vector<Value>& in) { return ops::pow(b, in[0], in[1]); },
                                  {Tensor(F{2.0f}), Tensor(F{3.0f})});
  CHECK(g[0](0) == doctest::Approx(12.0));
  CHECK(g[1](0) == doctest::Approx(8.0 * std::log(2.0)));
}

TEST_CASE("maximum and minimum gradients with broadcasting away from ties") {
  const auto x = [](const Shape& s, uint64_t seed) { return on_grid(s, seed, 0.0f); };
  const auto y = [](const Shape& s, uint64_t seed) { return on_grid(s, seed, 0.2f); };
  SUBCASE("maximum") { check_binary(ops::maximum, x, y); }
  SUBCASE("minimum") { check_binary(ops::minimum, x, y); }
}

TEST_CASE("maximum and minimum split the gradient equally on ties") {
  const std::vector<Tensor> xy = {Tensor(F{1.0f, 2.0f, 3.0f}), Tensor(F{1.0f, 0.0f, 5.0f})};
  const auto binary = [](Binary op) {
    return [op](Builder& b, const std::vector<Value>& in) { return op(b, in[0], in[1]); };
  };
  const auto gmax = gradients_of_sum(binary(ops::maximum), xy);
  CHECK(gmax[0] == F{0.5f, 1.0f, 0.0f});
  CHECK(gmax[1] == F{0.5f, 0.0f, 1.0f});
  const auto gmin = gradients_of_sum(binary(ops::minimum), xy);
  CHECK(gmin[0] == F{0.5f, 0.0f, 1.0f});
  CHECK(gmin[1] == F{0.5f, 1.0f, 0.0f});

  SUBCASE("maximum of x with itself has gradient 1") {
    const auto g =
        gradients_of_sum([](Builder& b, const std::vector<Value>& in) { return ops::maximum(b, in[0], in[0]); },
                         {Tensor(F{-1.0f, 0.0f, 4.0f})});
    CHECK(g[0] == F{1.0f, 1.0f, 1.0f});
  }
  SUBCASE("a broadcast scalar collects its shares") {
    // maximum([1, 2, 2], 2) = [2, 2, 2]: the scalar wins once and ties twice.
    const auto g = gradients_of_sum(binary(ops::maximum), {Tensor(F{1.0f, 2.0f, 2.0f}), Tensor::scalar(2.0f)});
    CHECK(g[0] == F{0.0f, 0.5f, 0.5f});
    CHECK(g[1]() == 2.0f);
  }
}

TEST_CASE("select gradients with broadcasting") {
  // (cond, x, y) shapes: equal, x and y broadcast, all three broadcast, a scalar condition.
  const std::vector<std::vector<Shape>> cases = {
      {{2, 3}, {2, 3}, {2, 3}}, {{2, 3}, {3}, {}}, {{2, 1}, {1, 3}, {2, 3}}, {{3}, {2, 1}, {2, 3}}, {{}, {2, 3}, {3}}};
  uint64_t seed = 1;
  for (const auto& s : cases) {
    INFO("shapes ", shape_str(s[0]), " ", shape_str(s[1]), " ", shape_str(s[2]));
    check_gradients([](Builder& b, const std::vector<Value>& in) { return ops::select(b, in[0], in[1], in[2]); },
                    {mask_tensor(s[0], seed), random_tensor(s[1], seed + 1), random_tensor(s[2], seed + 2)});
    seed += 3;
  }
}

TEST_CASE("select routes the gradient to the chosen operand") {
  const auto g =
      gradients_of_sum([](Builder& b, const std::vector<Value>& in) { return ops::select(b, in[0], in[1], in[2]); },
                       {Tensor(xt::xarray<bool>{{true, false, true}, {false, false, true}}),
                        Tensor(F{1.0f, 2.0f, 3.0f}), Tensor::scalar(7.0f)});
  CHECK(g[0] == F{1.0f, 0.0f, 2.0f});  // x broadcast over the rows: counts of true per column
  CHECK(g[1]() == 3.0f);               // y: count of false
}

TEST_CASE("cast f32 to f32 passes the gradient") {
  check_gradients([](Builder& b, const std::vector<Value>& in) { return ops::cast(b, in[0], DType::f32); },
                  {random_tensor({2, 3}, 3)});
}

TEST_CASE("cast through i32 carries no gradient") {
  // d/dx sum(x * f32(i32(x))) = f32(i32(x)): the truncated copy is a constant.
  const auto g = gradients_of_sum(
      [](Builder& b, const std::vector<Value>& in) {
        return ops::mul(b, in[0], ops::cast(b, ops::cast(b, in[0], DType::i32), DType::f32));
      },
      {Tensor(F{1.5f, -2.7f, 0.25f})});
  CHECK(g[0] == F{1.0f, -2.0f, 0.0f});
}

TEST_CASE("grad of grad for elementwise ops by finite differences") {
  SUBCASE("mul") {
    // d/dx sum(x * y * x) = 2xy, with y broadcast.
    check_gradients(first_derivative([](Builder& b, const std::vector<Value>& in) {
                      return ops::mul(b, ops::mul(b, in[0], in[1]), in[0]);
                    }),
                    {random_tensor({2, 3}, 1), random_tensor({3}, 2)});
  }
  SUBCASE("exp") {
    check_gradients(first_derivative([](Builder& b, const std::vector<Value>& in) { return ops::exp(b, in[0]); }),
                    {random_tensor({2, 3}, 3)});
  }
  SUBCASE("tanh") {
    check_gradients(first_derivative([](Builder& b, const std::vector<Value>& in) { return ops::tanh(b, in[0]); }),
                    {random_tensor({2, 3}, 4, -2.0f, 2.0f)});
  }
  SUBCASE("div") {
    // Differentiated first with respect to the denominator in[0]: -x / y^2.
    check_gradients(
        first_derivative([](Builder& b, const std::vector<Value>& in) { return ops::div(b, in[1], in[0]); }),
        {away_from_zero({2, 1}, 5, 0.5f), random_tensor({2, 3}, 6)});
  }
  SUBCASE("sqrt and log") {
    check_gradients(
        first_derivative([](Builder& b, const std::vector<Value>& in) { return ops::log(b, ops::sqrt(b, in[0])); }),
        {random_tensor({4}, 7, 0.5f, 2.0f)});
  }
  SUBCASE("pow") {
    check_gradients(
        first_derivative([](Builder& b, const std::vector<Value>& in) { return ops::pow(b, in[0], in[1]); }),
        {random_tensor({2, 3}, 8, 0.5f, 2.0f), random_tensor({3}, 9, -1.5f, 1.5f)});
  }
}
