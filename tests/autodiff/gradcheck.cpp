#include "gradcheck.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/autodiff.h"
#include "engine/interpreter.h"

namespace kiln::test {
namespace {

// The name of input i: x0, x1, ...
std::string input_name(size_t i) { return std::string("x").append(std::to_string(i)); }

}  // namespace

Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor::F32 a = Tensor::F32::from_shape(xt_shape(shape));
  for (float& x : a) x = dist(rng);
  return Tensor(std::move(a));
}

void check_gradients(const std::function<Value(Builder&, const std::vector<Value>&)>& f,
                     const std::vector<Tensor>& values, const GradCheckOptions& opts) {
  Graph g("gradcheck");
  Builder b(g);
  std::vector<Value> inputs;
  for (size_t i = 0; i < values.size(); ++i) inputs.push_back(b.input(input_name(i), values[i].type()));
  const Value y = f(b, inputs);
  Value loss = y;
  Tensor weights;
  if (b.type(y).rank() != 0) {
    weights = random_tensor(b.type(y).shape, opts.seed + 1000, 0.5f, 1.5f);
    const Value r = b.input("r", b.type(y));
    loss = b.emit1("sum", {b.emit1("mul", {y, r})}, {}, "loss");
  }
  std::vector<size_t> wrt_index;
  std::vector<Value> wrt;
  for (size_t i = 0; i < values.size(); ++i) {
    const bool constant = std::find(opts.constant.begin(), opts.constant.end(), i) != opts.constant.end();
    if (values[i].dtype() == DType::f32 && !constant) {
      wrt_index.push_back(i);
      wrt.push_back(inputs[i]);
    }
  }
  const std::vector<Value> grads = grad(g, loss, wrt);
  b.output(loss);
  for (Value gv : grads) b.output(gv);

  Interpreter exe(g);
  auto bind_all = [&](const std::vector<Tensor>& vals) {
    for (size_t i = 0; i < vals.size(); ++i) exe.bind(input_name(i), vals[i]);
    if (b.type(y).rank() != 0) exe.bind("r", weights);
  };
  bind_all(values);
  exe.run();
  std::vector<Tensor> analytic;
  for (Value gv : grads) analytic.push_back(exe.output(g.name_of(gv)));
  const std::string loss_name = g.name_of(loss);

  for (size_t k = 0; k < wrt_index.size(); ++k) {
    const size_t i = wrt_index[k];
    const int64_t n = values[i].numel();
    const int64_t stride = std::max<int64_t>(1, n / opts.max_elements);
    for (int64_t e = 0; e < n; e += stride) {
      std::vector<Tensor> plus = values, minus = values;
      plus[i].f32().flat(static_cast<size_t>(e)) += opts.step;
      minus[i].f32().flat(static_cast<size_t>(e)) -= opts.step;
      bind_all(plus);
      exe.run();
      const float lp = exe.output(loss_name).f32()();
      bind_all(minus);
      exe.run();
      const float lm = exe.output(loss_name).f32()();
      const float numeric = (lp - lm) / (2 * opts.step);
      const float an = analytic[k].f32().flat(static_cast<size_t>(e));
      const float tol = opts.atol + opts.rtol * std::max(std::abs(an), std::abs(numeric));
      INFO("input x", i, " element ", e, ": analytic ", an, ", numeric ", numeric);
      CHECK(std::abs(an - numeric) <= tol);
    }
  }
}

}  // namespace kiln::test
