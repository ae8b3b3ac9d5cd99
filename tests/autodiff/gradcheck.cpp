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

void check_gradients(const std::function<std::vector<Value>(Builder&, const std::vector<Value>&)>& f,
                     const std::vector<Tensor>& values, const GradCheckOptions& opts) {
  Graph g("gradcheck");
  Builder b(g);
  std::vector<Value> inputs;
  for (size_t i = 0; i < values.size(); ++i) inputs.push_back(b.input(input_name(i), values[i].type()));
  const std::vector<Value> ys = f(b, inputs);
  REQUIRE(!ys.empty());
  Value loss = ys[0];
  std::vector<Tensor> weights;  // r0, r1, ...: one per result
  if (ys.size() > 1 || b.type(ys[0]).rank() != 0) {
    for (size_t j = 0; j < ys.size(); ++j) {
      weights.push_back(random_tensor(b.type(ys[j]).shape, opts.seed + 1000 + j, 0.5f, 1.5f));
      const Value r = b.input(std::string("r").append(std::to_string(j)), b.type(ys[j]));
      const Value term = b.emit1("sum", {b.emit1("mul", {ys[j], r})});
      loss = j == 0 ? term : b.emit1("add", {loss, term});
    }
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
    for (size_t j = 0; j < weights.size(); ++j) exe.bind(std::string("r").append(std::to_string(j)), weights[j]);
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

void check_gradients(const std::function<Value(Builder&, const std::vector<Value>&)>& f,
                     const std::vector<Tensor>& values, const GradCheckOptions& opts) {
  check_gradients([&f](Builder& b, const std::vector<Value>& in) { return std::vector<Value>{f(b, in)}; }, values,
                  opts);
}

}  // namespace kiln::test
