#include "engine/param_init.h"

#include <doctest/doctest.h>

#include <cmath>
#include <xtensor/xmath.hpp>
#include <xtensor/xsort.hpp>

#include "engine/interpreter.h"
#include "engine/ir/error.h"

using namespace kiln;
using doctest::Approx;
using doctest::Contains;

namespace {

ValueInfo param(const std::string& name, TensorType type, Attrs attrs = {}) {
  return {name, std::move(type), ValueKind::param, -1, std::move(attrs)};
}

TensorType f32(Shape shape) { return {DType::f32, std::move(shape)}; }

}  // namespace

TEST_CASE("init zeros and ones fill every dtype") {
  CHECK(initial_value(param("a", f32({2}), {{"init", std::string("ones")}}), 0).f32() == Tensor::F32{1.0f, 1.0f});
  CHECK(initial_value(param("b", {DType::i32, {3}}, {{"init", std::string("ones")}}), 0).i32() == Tensor::I32{1, 1, 1});
  CHECK(initial_value(param("c", {DType::boolean, {2}}, {{"init", std::string("ones")}}), 0).b8() ==
        Tensor::Bool{true, true});
  CHECK(initial_value(param("d", f32({2, 2}), {{"init", std::string("zeros")}}), 0).f32() ==
        Tensor::F32{{0.0f, 0.0f}, {0.0f, 0.0f}});
}

TEST_CASE("without init: glorot for params of rank >= 2, zeros for lower ranks and for state") {
  const Tensor w = initial_value(param("w", f32({4, 5})), 1);
  CHECK(xt::amax(xt::abs(w.f32()))() > 0.0f);
  CHECK(initial_value(param("b", f32({5})), 1).f32() == Tensor::F32(xt::zeros<float>({5})));
  CHECK(initial_value(param("s", f32({})), 1).f32()() == 0.0f);
  const ValueInfo moment{"m", f32({4, 5}), ValueKind::state, -1, {}};
  CHECK(initial_value(moment, 1).f32() == Tensor::F32(xt::zeros<float>({4, 5})));
}

TEST_CASE("glorot and normal draw the documented Philox stream (values from an independent implementation)") {
  // Computed with a separate Python implementation of the scheme in param_init.h,
  // whose Philox matches Random123's known answer philox4x32_10(0, 0) = 6627e8d5 ...
  const Tensor w = initial_value(param("w", f32({2, 3})), 7);
  const float glorot[] = {1.0711050033569336f,   -0.3482445478439331f, -0.3375411033630371f,
                          -0.30270707607269287f, -1.0309392213821411f, -0.10044469684362411f};
  for (size_t i = 0; i < 6; ++i) CHECK(w.f32().flat(i) == Approx(glorot[i]).epsilon(1e-6));

  const Tensor e = initial_value(param("e", f32({4}), {{"init", std::string("normal")}, {"std", 0.5}}), 123456789012);
  const float normal[] = {-0.002681231126189232f, -0.044324640184640884f, -1.0678662061691284f, 0.429892897605896f};
  for (size_t i = 0; i < 4; ++i) CHECK(e.f32().flat(i) == Approx(normal[i]).epsilon(1e-5));
}

TEST_CASE("glorot stays within sqrt(6 / (fan_in + fan_out)) of the last two dims and fills the range") {
  const Tensor w = initial_value(param("w", f32({3, 30, 20})), 42);
  const float a = std::sqrt(6.0f / 50.0f);
  CHECK(xt::amax(w.f32())() < a);
  CHECK(xt::amin(w.f32())() >= -a);
  CHECK(xt::amax(w.f32())() > 0.95f * a);
  CHECK(xt::amin(w.f32())() < -0.95f * a);
  CHECK(std::fabs(xt::mean(w.f32())()) < 0.02f);
}

TEST_CASE("normal has the requested standard deviation, 0.02 by default") {
  const Tensor a = initial_value(param("a", f32({100, 100}), {{"init", std::string("normal")}, {"std", 0.5}}), 3);
  CHECK(xt::stddev(a.f32())() == Approx(0.5).epsilon(0.02));
  CHECK(std::fabs(xt::mean(a.f32())()) < 0.01f);
  const Tensor b = initial_value(param("b", f32({100, 100}), {{"init", std::string("normal")}}), 3);
  CHECK(xt::stddev(b.f32())() == Approx(0.02).epsilon(0.02));
}

TEST_CASE("each param's stream depends only on the seed and its name") {
  const ValueInfo w = param("w", f32({8, 8}));
  CHECK(initial_value(w, 5).f32() == initial_value(w, 5).f32());
  CHECK(initial_value(w, 5).f32() != initial_value(w, 6).f32());
  CHECK(initial_value(w, 5).f32() != initial_value(param("v", f32({8, 8})), 5).f32());

  // Adding a param to a graph leaves the others' values alone.
  auto values_of_w = [](bool with_extra) {
    Graph g;
    if (with_extra) g.declare(ValueKind::param, "extra", f32({8, 8}));
    g.declare(ValueKind::param, "w", f32({8, 8}));
    Interpreter exe(std::move(g));
    bind_initial_values(exe, 5);
    return exe.binding("w").f32();
  };
  CHECK(values_of_w(false) == values_of_w(true));
}

TEST_CASE("bind_initial_values binds unbound params and state only") {
  Graph g;
  g.declare(ValueKind::input, "x", f32({2}));
  g.declare(ValueKind::param, "w", f32({2}), {{"init", std::string("ones")}});
  g.declare(ValueKind::param, "kept", f32({2}), {{"init", std::string("ones")}});
  g.declare(ValueKind::state, "step", {DType::i32, {}});
  Interpreter exe(std::move(g));
  exe.bind("kept", Tensor(Tensor::F32{7.0f, 8.0f}));
  bind_initial_values(exe, 0);
  CHECK_FALSE(exe.is_bound("x"));
  CHECK(exe.binding("w").f32() == Tensor::F32{1.0f, 1.0f});
  CHECK(exe.binding("kept").f32() == Tensor::F32{7.0f, 8.0f});
  CHECK(exe.binding("step").i32()() == 0);
}

TEST_CASE("init errors name the declaration and the problem") {
  CHECK_THROWS_WITH_AS(initial_value(param("w", f32({2}), {{"init", std::string("xavier")}}), 0),
                       "param %w: unknown init \"xavier\" (expected \"zeros\", \"ones\", \"glorot\", \"normal\", "
                       "\"sinusoidal\" or \"load\")",
                       Error);
  CHECK_THROWS_WITH_AS(initial_value(param("b", f32({4}), {{"init", std::string("glorot")}}), 0),
                       "param %b: init \"glorot\" needs rank >= 2, the type is f32[4]", Error);
  CHECK_THROWS_WITH_AS(initial_value(param("i", {DType::i32, {2, 2}}), 0),
                       "param %i: init \"glorot\" needs f32, the type is i32[2,2]", Error);
  CHECK_THROWS_WITH_AS(initial_value(param("n", f32({2}), {{"init", std::string("normal")}, {"std", -1.0}}), 0),
                       "param %n: std must be a finite number >= 0", Error);
  CHECK_THROWS_WITH_AS(initial_value(param("k", f32({2}), {{"init", int64_t{1}}}), 0), Contains("param %k: "), Error);
  CHECK_THROWS_WITH_AS(initial_value(param("p", f32({4}), {{"init", std::string("sinusoidal")}}), 0),
                       "param %p: init \"sinusoidal\" needs f32[positions, D], the type is f32[4]", Error);
  const ValueInfo input{"x", f32({2}), ValueKind::input, -1, {}};
  CHECK_THROWS_WITH_AS(initial_value(input, 0), "input %x: only params and state have initial values", Error);
}

TEST_CASE("sinusoidal is the Transformer's positional encoding") {
  // PE[pos, 2i] = sin(pos / 10000^(2i/D)), PE[pos, 2i+1] = cos(pos / 10000^(2i/D)),
  // checked against the formula evaluated here in long double, and at a few known points.
  const int64_t positions = 50, d = 6;
  const ValueInfo pe{"pos_enc", f32({positions, d}), ValueKind::state, -1, {{"init", std::string("sinusoidal")}}};
  const Tensor t = initial_value(pe, 0);
  for (int64_t pos = 0; pos < positions; ++pos) {
    for (int64_t i = 0; i < d / 2; ++i) {
      const long double angle = pos / std::pow(10000.0L, 2.0L * i / d);
      // Both sides are f32 roundings of the same real number: equal within one ulp.
      CHECK(t.f32()(pos, 2 * i) == Approx(static_cast<float>(std::sin(angle))).epsilon(1e-6).scale(1e-7));
      CHECK(t.f32()(pos, 2 * i + 1) == Approx(static_cast<float>(std::cos(angle))).epsilon(1e-6).scale(1e-7));
    }
  }
  CHECK(t.f32()(0, 0) == 0.0f);
  CHECK(t.f32()(0, 1) == 1.0f);
  CHECK(t.f32()(1, 0) == static_cast<float>(std::sin(1.0)));  // i = 0: the angle is pos
  // The seed plays no part.
  CHECK(initial_value(pe, 12345).f32() == t.f32());
}
