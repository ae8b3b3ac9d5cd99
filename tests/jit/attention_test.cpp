// flash_attention and flash_attention_backward compiled against the interpreter,
// on random shapes (sequence lengths and head sizes off the vector widths, batch
// dims of rank 0 to 2, masks broadcast over heads and rows) with masked keys and
// rows that attend to nothing, at 1 and 2 threads.
//
// Tolerance {2e-4, 2e-4}: the reference computes in double, the kernel in f32 with
// its fast exp (1.5 ulp). A score q . k * scale sums d <= 70 products of values
// up to 4 in magnitude, scale 1/sqrt(d): its f32 error is about sqrt(d) * 16 *
// 2^-24 * scale ~ 1e-6 absolute, which exp turns into the same relative error of
// the weights; outputs are sums of weights times values up to 4, and the
// gradients sums of up to 70 such terms (measured: under 3e-5).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/builder.h"
#include "jit/differential.h"
#include "ops/attention.h"

using namespace kiln;
using namespace kiln::test;

namespace {

constexpr Tolerance kAttention{2e-4, 2e-4};
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Sizes {
  Shape batch;
  int64_t t, s, d, dv;
  bool mask_per_row;  // [.., T, S] mask, else a padding mask [.., 1, S]
};

Shape with(Shape batch, std::initializer_list<int64_t> last) {
  batch.insert(batch.end(), last);
  return batch;
}

// q, k, v, mask, do -> o, lse and (with `backward`) dq, dk, dv.
Graph attention_graph(const Sizes& z, bool backward) {
  Graph g("attention");
  Builder b(g);
  const double scale = 1.0 / std::sqrt(static_cast<double>(z.d));
  const Value q = b.input("q", {DType::f32, with(z.batch, {z.t, z.d})});
  const Value k = b.input("k", {DType::f32, with(z.batch, {z.s, z.d})});
  const Value v = b.input("v", {DType::f32, with(z.batch, {z.s, z.dv})});
  Shape mask_shape = z.batch.empty() ? Shape{} : Shape{z.batch[0]};
  if (!z.batch.empty()) mask_shape.resize(z.batch.size(), 1);
  const Value mask = b.input("mask", {DType::f32, with(mask_shape, {z.mask_per_row ? z.t : 1, z.s})});
  const auto [o, lse] = ops::flash_attention(b, q, k, v, mask, scale);
  b.output(o);
  b.output(lse);
  if (backward) {
    const Value d_o = b.input("do", {DType::f32, with(z.batch, {z.t, z.dv})});
    for (Value d : b.emit("flash_attention_backward", {q, k, v, mask, o, lse, d_o}, {{"scale", scale}})) b.output(d);
  }
  return g;
}

// Masks a third of the keys, and in masks of several rows all of row 0 (a row
// with nothing to attend to).
std::map<std::string, Tensor> bindings(const Graph& g, Rng& rng) {
  std::map<std::string, Tensor> b = random_bindings(g, rng, Values::moderate);
  Tensor::F32& mask = b.at("mask").f32();
  for (float& m : mask) m = rng.coin(0.33) ? -kInf : 0.0f;
  const size_t s = mask.shape().back(), rows = mask.shape()[mask.dimension() - 2];
  if (rows > 1)
    for (size_t first = 0; first < mask.size(); first += rows * s)
      for (size_t j = 0; j < s; ++j) mask.data()[first + j] = -kInf;
  return b;
}

Sizes random_sizes(Rng& rng) {
  const std::vector<int64_t> lengths = {1, 3, 16, 17, 32, 33};
  Sizes z;
  const int64_t rank = rng.uniform(0, 2);
  for (int64_t i = 0; i < rank; ++i) z.batch.push_back(rng.uniform(1, 3));
  z.t = rng.pick(lengths);
  z.s = rng.pick(lengths);
  z.d = rng.pick(std::vector<int64_t>{1, 8, 16, 19, 64});
  z.dv = rng.pick(std::vector<int64_t>{1, 5, 16, 33, 64});
  z.mask_per_row = rng.coin();
  return z;
}

}  // namespace

TEST_CASE("jit flash_attention and its backward match the interpreter on random shapes and masks") {
  Rng rng(91);
  for (int i = 0; i < 24; ++i) {
    const Sizes z = random_sizes(rng);
    INFO("batch ", shape_str(z.batch), " t ", z.t, " s ", z.s, " d ", z.d, " dv ", z.dv);
    const Graph g = attention_graph(z, /*backward=*/i % 2 == 1);
    check_jit_matches_interpreter(g, bindings(g, rng), kAttention);
  }
}

TEST_CASE("jit flash_attention gives the same bits at 1 and 2 threads, and zeros for a row with nothing to attend") {
  Rng rng(92);
  const Sizes z{{4, 8}, 33, 33, 64, 64, true};
  const Graph g = attention_graph(z, true);
  const std::map<std::string, Tensor> b = bindings(g, rng);
  std::vector<std::map<std::string, Tensor>> runs;
  for (int threads : {1, 2}) {
    kiln_set_num_threads(threads);
    compiler::JitExecutable jit(g);
    for (const auto& [name, t] : b) jit.bind(name, t);
    jit.run();
    std::map<std::string, Tensor> out;
    for (Value v : g.outputs()) out.emplace(g.name_of(v), jit.output(g.name_of(v)));
    runs.push_back(std::move(out));
  }
  kiln_set_num_threads(0);
  for (const auto& [name, t] : runs[0]) CHECK(compare_tensors(t, runs[1].at(name), {0, 0}) == "");
  // The mask drops all of row 0 in every batch and head: o row 0 is 0, lse -inf,
  // and q row 0 gets no gradient.
  const auto result = [&](size_t i) -> const Tensor::F32& { return runs[0].at(g.name_of(g.outputs()[i])).f32(); };
  for (size_t batch = 0; batch < 4; ++batch)
    for (size_t head = 0; head < 8; ++head) {
      CHECK(result(1)(batch, head, 0) == -kInf);
      for (size_t c = 0; c < 64; ++c) {
        CHECK(result(0)(batch, head, 0, c) == 0.0f);
        CHECK(result(2)(batch, head, 0, c) == 0.0f);
      }
    }
}
