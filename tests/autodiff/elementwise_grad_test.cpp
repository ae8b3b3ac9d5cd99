// Gradient rules of the elementwise ops at exact values: kinks, ties, routing,
// the cuts of cast, and pow's base for a negative base. Finite-difference checks
// over shapes and broadcasting, and grad of grad, are the op table's
// (tests/op_table/).
#include <doctest/doctest.h>

#include <xtensor/xmath.hpp>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "gradcheck.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"

using namespace kiln;
using test::check_gradients;
using test::GradCheckOptions;
using test::random_tensor;
using F = xt::xarray<float>;

namespace {

using Binary = Value (*)(Builder&, Value, Value);
using GraphFn = std::function<Value(Builder&, const std::vector<Value>&)>;

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

}  // namespace

TEST_CASE("relu gradient is 0 at the kink") {
  const auto g = gradients_of_sum([](Builder& b, const std::vector<Value>& in) { return ops::relu(b, in[0]); },
                                  {Tensor(F{-1.0f, 0.0f, 2.0f})});
  CHECK(g[0] == F{0.0f, 0.0f, 1.0f});
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

TEST_CASE("select routes the gradient to the chosen operand") {
  const auto g =
      gradients_of_sum([](Builder& b, const std::vector<Value>& in) { return ops::select(b, in[0], in[1], in[2]); },
                       {Tensor(xt::xarray<bool>{{true, false, true}, {false, false, true}}),
                        Tensor(F{1.0f, 2.0f, 3.0f}), Tensor::scalar(7.0f)});
  CHECK(g[0] == F{1.0f, 0.0f, 2.0f});  // x broadcast over the rows: counts of true per column
  CHECK(g[1]() == 3.0f);               // y: count of false
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
