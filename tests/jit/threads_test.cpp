// Results do not depend on the thread count: each index's work is the same
// however kiln_parallel_for splits the range, so 1, 2 and 4 threads give
// bit-identical outputs.
#include <doctest/doctest.h>

#include <atomic>
#include <vector>

#include "compiler/jit_executable.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/builder.h"
#include "jit/differential.h"
#include "ops/constant.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/reduction.h"

using namespace kiln;

TEST_CASE("kiln_parallel_for covers every index exactly once for any thread count") {
  for (int threads : {1, 2, 3, 4, 8}) {
    kiln_set_num_threads(threads);
    CHECK(kiln_num_threads() == threads);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      kiln_parallel_for(
          n, 10,
          [](void* ctx, int64_t begin, int64_t end) {
            auto& h = *static_cast<std::vector<std::atomic<int>>*>(ctx);
            for (int64_t i = begin; i < end; ++i) h[static_cast<size_t>(i)]++;
          },
          &hits);
      int64_t wrong = 0;
      for (auto& h : hits) wrong += h.load() != 1;
      CHECK(wrong == 0);
    }
  }
  kiln_set_num_threads(0);
  CHECK(kiln_num_threads() >= 1);
}

TEST_CASE("jit outputs are bit-identical with 1 2 and 4 threads") {
  Graph g("threads");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {513, 1031}});
  const Value key = b.input("key", {DType::i32, {}});
  const Value y = ops::tanh(b, ops::add(b, ops::exp(b, x), ops::iota(b, {513, 1031}, 1, DType::f32)));
  b.output(ops::dropout(b, y, key, 0.3, 5));
  b.output(ops::sum(b, y, {1}));
  b.output(ops::mean(b, y, {0}));
  b.output(ops::max(b, y));
  test::Rng rng(99);
  const std::map<std::string, Tensor> bindings = test::random_bindings(g, rng, test::Values::moderate);
  std::vector<std::vector<Tensor>> results;
  compiler::JitExecutable jit(g);
  for (const auto& [name, t] : bindings) jit.bind(name, t);
  for (int threads : {1, 2, 4}) {
    kiln_set_num_threads(threads);
    jit.run();
    std::vector<Tensor> outs;
    for (const std::string& name : jit.output_names()) outs.push_back(jit.output(name));
    results.push_back(std::move(outs));
  }
  kiln_set_num_threads(0);
  for (size_t r = 1; r < results.size(); ++r)
    for (size_t i = 0; i < results[0].size(); ++i) {
      INFO("output " << i << " with " << (r == 1 ? 2 : 4) << " threads");
      CHECK(test::compare_tensors(results[0][i], results[r][i], {0, 0}) == "");
    }
}
