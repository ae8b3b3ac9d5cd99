// flash_attention on the interpreter: the composite softmax(q k^T * scale + mask) v
// built from plain ops, its lse, rows with nothing to attend to, and bad operands.
#include "ops/attention.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "engine/interpreter.h"
#include "engine/ir/error.h"
#include "op_test_util.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/reduction.h"

using namespace kiln;
using test::kInf;

namespace {

struct Case {
  Shape q, k, v, mask;
};

// Runs `build` on inputs q, k, v, mask and returns its outputs.
std::vector<Tensor> run(const Case& c, const std::vector<Tensor>& values,
                        const std::function<std::vector<Value>(Builder&, Value, Value, Value, Value)>& build) {
  Graph g("attention");
  Builder b(g);
  const std::vector<Value> outs =
      build(b, b.input("q", {DType::f32, c.q}), b.input("k", {DType::f32, c.k}), b.input("v", {DType::f32, c.v}),
            b.input("mask", {DType::f32, c.mask}));
  std::vector<std::string> names;
  for (Value v : outs) {
    b.output(v);
    names.push_back(g.name_of(v));
  }
  Interpreter interp(std::move(g));
  const char* inputs[] = {"q", "k", "v", "mask"};
  for (size_t i = 0; i < 4; ++i) interp.bind(inputs[i], values[i]);
  interp.run();
  std::vector<Tensor> results;
  for (const std::string& n : names) results.push_back(interp.output(n));
  return results;
}

// Values in [lo, hi) from a linear congruential sequence.
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::zeros({DType::f32, shape});
  for (float& x : t.f32()) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * static_cast<float>(seed >> 40) * 0x1.0p-24f;
  }
  return t;
}

std::vector<Tensor> values_for(const Case& c, uint64_t seed) {
  Tensor mask = random_tensor(c.mask, seed + 3, -1.0f, 1.0f);
  for (float& m : mask.f32()) m = m < -0.6f ? -kInf : 0.0f;  // drop about a fifth of the keys
  return {random_tensor(c.q, seed, -2.0f, 2.0f), random_tensor(c.k, seed + 1, -2.0f, 2.0f),
          random_tensor(c.v, seed + 2, -1.0f, 1.0f), mask};
}

}  // namespace

TEST_CASE("flash_attention equals softmax(q k^T * scale + mask) v and returns the rows' log-sum-exp") {
  const std::vector<Case> cases = {
      {{3, 4}, {5, 4}, {5, 2}, {3, 5}},                        // no batch dims
      {{2, 3, 7, 5}, {2, 3, 9, 5}, {2, 3, 9, 6}, {2, 1, 1, 9}},  // padding mask broadcast over heads and rows
      {{2, 6, 4}, {2, 6, 4}, {2, 6, 3}, {6, 6}},                // one mask for every batch
      {{1, 17, 33}, {1, 19, 33}, {1, 19, 17}, {1, 17, 19}},
  };
  uint64_t seed = 10;
  for (const Case& c : cases) {
    INFO("q ", shape_str(c.q), " mask ", shape_str(c.mask));
    const double scale = 0.37;
    const std::vector<Tensor> values = values_for(c, seed += 10);
    const std::vector<Tensor> fused = run(c, values, [&](Builder& b, Value q, Value k, Value v, Value mask) {
      const auto [o, lse] = ops::flash_attention(b, q, k, v, mask, scale);
      return std::vector<Value>{o, lse};
    });
    const std::vector<Tensor> plain = run(c, values, [&](Builder& b, Value q, Value k, Value v, Value mask) {
      const Value s = ops::add(b, ops::mul(b, ops::matmul(b, q, k, false, true), ops::fill(b, {}, scale)), mask);
      const Value m = ops::max(b, s, {-1}, true);
      const Value lse = ops::add(b, ops::log(b, ops::sum(b, ops::exp(b, ops::sub(b, s, m)), {-1}, true)), m);
      return std::vector<Value>{ops::matmul(b, ops::softmax(b, s), v), ops::sum(b, lse, {-1})};
    });
    for (size_t r = 0; r < 2; ++r) {
      const auto &got = fused[r].f32(), &want = plain[r].f32();
      REQUIRE(got.shape() == want.shape());
      for (size_t i = 0; i < got.size(); ++i) CHECK(got.data()[i] == doctest::Approx(want.data()[i]).epsilon(1e-5));
    }
  }
}

TEST_CASE("a flash_attention row with every key masked gives zeros, lse -inf, and no gradient") {
  const Case c{{1, 3, 4}, {1, 5, 4}, {1, 5, 2}, {1, 3, 5}};
  std::vector<Tensor> values = values_for(c, 7);
  for (float& m : values[3].f32()) m = 0.0f;
  for (size_t j = 0; j < 5; ++j) values[3].f32()(0, 1, j) = -kInf;  // row 1 attends to nothing
  const std::vector<Tensor> r = run(c, values, [&](Builder& b, Value q, Value k, Value v, Value mask) {
    const auto [o, lse] = ops::flash_attention(b, q, k, v, mask, 0.5);
    const std::vector<Value> d = b.emit("flash_attention_backward", {q, k, v, mask, o, lse, ops::fill(b, {1, 3, 2}, 1.0)},
                                        {{"scale", 0.5}});
    return std::vector<Value>{o, lse, d[0]};
  });
  for (size_t c2 = 0; c2 < 2; ++c2) CHECK(r[0].f32()(0, 1, c2) == 0.0f);
  CHECK(r[1].f32()(0, 1) == -kInf);
  for (size_t c2 = 0; c2 < 4; ++c2) CHECK(r[2].f32()(0, 1, c2) == 0.0f);
  for (float x : r[0].f32()) CHECK(std::isfinite(x));
}

TEST_CASE("flash_attention refuses operands that do not fit, naming them") {
  const auto fails = [](Shape q, Shape k, Shape v, Shape mask, const std::string& part) {
    Graph g("bad");
    Builder b(g);
    try {
      ops::flash_attention(b, b.input("q", {DType::f32, q}), b.input("k", {DType::f32, k}),
                           b.input("v", {DType::f32, v}), b.input("mask", {DType::f32, mask}), 1.0);
      FAIL("accepted");
    } catch (const Error& e) {
      CHECK_MESSAGE(std::string(e.what()).find(part) != std::string::npos, e.what());
    }
  };
  fails({2, 3, 4}, {3, 5, 4}, {3, 5, 4}, {1}, "same leading dims");
  fails({3, 4}, {5, 3}, {5, 4}, {1}, "k's last dim");
  fails({3, 4}, {5, 4}, {6, 4}, {1}, "v must have k's 5 rows");
  fails({3, 4}, {5, 4}, {5, 4}, {4, 5}, "mask [4,5] must broadcast");
  fails({4}, {5, 4}, {5, 4}, {1}, "q (operand 0)");
}

TEST_CASE("flash_attention's causal drops the keys past the bottom-right diagonal, and is 0 or 1") {
  // T 2, S 3: query 0 sees keys 0, 1; query 1 all three. An explicit mask of
  // the same gives the same results.
  const Case c{{1, 2, 4}, {1, 3, 4}, {1, 3, 2}, {1, 2, 3}};
  std::vector<Tensor> values = values_for(c, 9);
  for (float& m : values[3].f32()) m = 0.0f;
  const auto attention = [&](bool causal) {
    return [causal](Builder& b, Value q, Value k, Value v, Value mask) {
      const auto [o, lse] = ops::flash_attention(b, q, k, v, mask, 0.5, 0, causal);
      const std::vector<Value> d = b.emit("flash_attention_backward",
                                          {q, k, v, mask, o, lse, ops::fill(b, {1, 2, 2}, 1.0)},
                                          {{"scale", 0.5}, {"causal", int64_t{causal}}});
      return std::vector<Value>{o, lse, d[0], d[1], d[2]};
    };
  };
  const std::vector<Tensor> causal = run(c, values, attention(true));
  values[3].f32()(0, 0, 2) = -kInf;
  const std::vector<Tensor> masked = run(c, values, attention(false));
  for (size_t i = 0; i < causal.size(); ++i)
    for (size_t e = 0; e < causal[i].f32().size(); ++e)
      CHECK(causal[i].f32().data()[e] == doctest::Approx(masked[i].f32().data()[e]).epsilon(1e-6));
  Graph g("bad");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {2, 4}});
  try {
    b.emit("flash_attention", {x, x, x, ops::fill(b, {}, 0.0)}, {{"scale", 1.0}, {"causal", 2}});
    FAIL("accepted");
  } catch (const Error& e) {
    CHECK_MESSAGE(std::string(e.what()).find("causal must be 0 or 1, got 2") != std::string::npos, e.what());
  }
}
