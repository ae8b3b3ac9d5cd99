// flash_attention and flash_attention_backward compiled, on one large problem:
// the same bits at 1 and 2 threads, and exact zeros (lse -inf) for rows with
// nothing to attend to. Random shapes and masks against the interpreter are the
// op table's rows (tests/op_table/rows_attention.cpp).
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

// q, k, v, mask, do -> o, lse, dq, dk, dv.
Graph attention_graph(const Sizes& z) {
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
  const Value d_o = b.input("do", {DType::f32, with(z.batch, {z.t, z.dv})});
  for (Value d : b.emit("flash_attention_backward", {q, k, v, mask, o, lse, d_o}, {{"scale", scale}})) b.output(d);
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

}  // namespace

TEST_CASE("jit flash_attention gives the same bits at 1 and 2 threads, and zeros for a row with nothing to attend") {
  Rng rng(92);
  const Sizes z{{4, 8}, 33, 33, 64, 64, true};
  const Graph g = attention_graph(z);
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
