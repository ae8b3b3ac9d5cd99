// flash_attention's kernels against the interpreter, forward and backward: the
// blocked ones (compiler/codegen/attention_blocked.cpp: more than 32 keys) and
// the row kernel, causal and not, heads packed and not, a key padding mask, a
// full [T, S] mask, T != S with causal, and S from 1 to 1030; and causal
// attention at T = S = 16,384, whose program holds nothing of T x T.
//
// Tolerance {5e-4, 5e-4}: the reference computes in double, the kernel in f32
// with its fast exp (1.5 ulp). With q, k, v in [-4, 4] and scale 1/sqrt(d) a
// score's f32 error is about 1e-6 (as the op table's rows say), the online
// softmax rescales o and the sum once per block of 64 keys (a few more
// roundings), and the gradients dk, dv sum up to T terms of p times values up
// to 4 (measured: under 1e-4).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "engine/ir/builder.h"
#include "jit/differential.h"
#include "ops/attention.h"
#include "ops/constant.h"

using namespace kiln;
using namespace kiln::test;

// Named, so that a unity build's neighbours (attention_test.cpp) keep their own helpers.
namespace blocked_attention_test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr Tolerance kBlocked{5e-4, 5e-4};

enum class Mask { none, padding, full };  // a scalar 0, [B, 1, 1, S], [B, 1, T, S]

struct Case {
  int64_t batch, heads, t, s, d;
  bool packed, causal;
  Mask mask;
};

Shape with(Shape batch, std::initializer_list<int64_t> last) {
  batch.insert(batch.end(), last);
  return batch;
}

// q, k, v, (mask,) do -> o, lse, dq, dk, dv.
Graph attention_graph(const Case& c) {
  Graph g("attention");
  Builder b(g);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
  const Shape batch = c.packed ? Shape{c.batch} : Shape{c.batch, c.heads};
  const int64_t columns = c.packed ? c.heads * c.d : c.d;
  const Value q = b.input("q", {DType::f32, with(batch, {c.t, columns})});
  const Value k = b.input("k", {DType::f32, with(batch, {c.s, columns})});
  const Value v = b.input("v", {DType::f32, with(batch, {c.s, columns})});
  Value mask;
  if (c.mask == Mask::none)
    mask = ops::fill(b, {}, 0.0);
  else
    mask = b.input("mask", {DType::f32, {c.batch, 1, c.mask == Mask::full ? c.t : 1, c.s}});
  const int64_t heads = c.packed ? c.heads : 0;
  const auto [o, lse] = ops::flash_attention(b, q, k, v, mask, scale, heads, c.causal);
  b.output(o);
  b.output(lse);
  const Value d_o = b.input("do", {DType::f32, with(batch, {c.t, columns})});
  for (Value d : b.emit("flash_attention_backward", {q, k, v, mask, o, lse, d_o},
                        {{"scale", scale}, {"heads", heads}, {"causal", int64_t{c.causal}}}))
    b.output(d);
  return g;
}

// A mask dropping about a third of the keys, and all of row 0 in a full mask
// (a row with nothing to attend to).
std::map<std::string, Tensor> bindings(const Graph& g, Rng& rng) {
  std::map<std::string, Tensor> b = random_bindings(g, rng, Values::moderate);
  if (!b.count("mask")) return b;
  Tensor::F32& mask = b.at("mask").f32();
  for (float& m : mask) m = rng.coin(0.33) ? -kInf : 0.0f;
  const size_t s = mask.shape().back(), rows = mask.shape()[2];
  if (rows > 1)
    for (size_t first = 0; first < mask.size(); first += rows * s)
      for (size_t j = 0; j < s; ++j) mask.data()[first + j] = -kInf;
  return b;
}

void check(const Case& c, uint64_t seed) {
  INFO("T " << c.t << " S " << c.s << " d " << c.d << " causal " << c.causal << " packed " << c.packed << " mask "
            << static_cast<int>(c.mask));
  Rng rng(seed);
  const Graph g = attention_graph(c);
  check_jit_matches_interpreter(g, bindings(g, rng), kBlocked);
}

}  // namespace

TEST_CASE("compiled flash_attention and its backward match the interpreter, causal or not, S from 1 to 1030") {
  uint64_t seed = 40;
  for (bool causal : {false, true})
    for (int64_t s : {1, 17, 300, 1030}) {
      const int64_t t = s == 1030 ? 37 : s;  // the interpreter's T x S x d stays small
      check({1, 2, t, s, 16, false, causal, Mask::none}, ++seed);
      check({2, 2, t, s, 8, true, causal, Mask::padding}, ++seed);
    }
}

TEST_CASE("compiled causal flash_attention aligns T != S bottom-right, with full and padding masks") {
  uint64_t seed = 60;
  for (auto [t, s] : {std::pair<int64_t, int64_t>{5, 300}, {70, 40}, {33, 100}, {100, 33}, {200, 150}, {150, 200}})
    for (Mask mask : {Mask::none, Mask::padding, Mask::full}) check({2, 2, t, s, 19, mask != Mask::full, true, mask}, ++seed);
}

TEST_CASE("causal flash_attention at T = S = 16,384 keeps nothing of T x T and matches rows in double") {
  constexpr int64_t kT = 16384, kD = 64;
  Graph g("long");
  Builder b(g);
  const double scale = 1.0 / std::sqrt(static_cast<double>(kD));
  const Value q = b.input("q", {DType::f32, {1, kT, kD}});
  const Value k = b.input("k", {DType::f32, {1, kT, kD}});
  const Value v = b.input("v", {DType::f32, {1, kT, kD}});
  const auto [o, lse] = ops::flash_attention(b, q, k, v, ops::fill(b, {}, 0.0), scale, 0, true);
  b.output(o);
  b.output(lse);
  compiler::JitExecutable jit(g);
  for (const compiler::ProgramBuffer& buffer : jit.compiled().program.buffers)
    CHECK_MESSAGE(buffer.type.numel() < kT * kT, buffer.name);
  CHECK(jit.compiled().program.plan.arena_bytes < kT * kT);
  Rng rng(7);
  const std::map<std::string, Tensor> values = random_bindings(g, rng, Values::moderate);
  for (const auto& [name, t] : values) jit.bind(name, t);
  jit.run();
  const Tensor::F32& out = jit.output(g.name_of(o)).f32();
  const Tensor::F32 &qs = values.at("q").f32(), &ks = values.at("k").f32(), &vs = values.at("v").f32();
  for (size_t i : {size_t{0}, size_t{1}, size_t{4097}, size_t{kT - 1}}) {
    std::vector<double> w(i + 1);
    double max = -std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t j = 0; j <= i; ++j) {
      double dot = 0;
      for (size_t c = 0; c < kD; ++c) dot += double{qs(0, i, c)} * ks(0, j, c);
      w[j] = dot * scale;
      max = std::max(max, w[j]);
    }
    for (double& x : w) sum += x = std::exp(x - max);
    for (size_t c = 0; c < kD; ++c) {
      double expected = 0;
      for (size_t j = 0; j <= i; ++j) expected += w[j] / sum * vs(0, j, c);
      CHECK_MESSAGE(std::fabs(out(0, i, c) - expected) <= 5e-4 + 5e-4 * std::fabs(expected), "row " << i);
    }
  }
}

}  // namespace blocked_attention_test

namespace blocked_attention_test {

TEST_CASE("blocks of keys a key mask drops entirely are skipped, rows with no key left give zeros") {
  uint64_t seed = 80;
  for (bool causal : {false, true})
    for (int64_t t : {1, 37}) {
      const Case c{2, 2, t, 300, 16, true, causal, Mask::padding};
      INFO("T " << t << " causal " << causal);
      Rng rng(++seed);
      const Graph g = attention_graph(c);
      std::map<std::string, Tensor> values = bindings(g, rng);
      Tensor::F32& mask = values.at("mask").f32();
      for (size_t j = 0; j < 300; ++j) {
        mask(0, 0, 0, j) = j >= 64 && j < 192 ? -kInf : 0.0f;  // two whole blocks of the forward's 64
        mask(1, 0, 0, j) = j < 256 ? -kInf : 0.0f;             // the first four blocks (causal: rows see none)
      }
      check_jit_matches_interpreter(g, values, kBlocked);
    }
}

}  // namespace blocked_attention_test
