// The data-parallel training graph: its gradients' sums can start while the
// backward pass still runs, because each part's weight enters through the
// backward pass's seed (models/optimizer.cpp) rather than a multiply of every
// gradient after it.
#include <doctest/doctest.h>

#include <sstream>

#include "compiler/passes/passes.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;

TEST_CASE("the training graph's gradient buckets start during the backward pass") {
  const TransformerConfig cfg = test::tiny_config(16, 0.0);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  adam.allreduce = true;
  std::ostringstream remarks;
  const Graph g = compiler::allreduce_buckets(build_train_graph(cfg, 2, 6, 6, adam), &remarks, 4096);
  INFO(remarks.str());
  std::vector<size_t> buckets;
  size_t last_matmul = 0;
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    if (g.nodes()[i].op() == "allreduce") buckets.push_back(i);
    if (g.nodes()[i].op() == "matmul") last_matmul = i;
  }
  REQUIRE(buckets.size() >= 3);
  // Every bucket but two starts before the backward pass's last matmul: the
  // one that follows that matmul (the first layer's weight gradients) and the
  // shared embedding's, complete only when the backward pass ends (the source
  // embedding's gradient is its last term). Weighted after the backward pass,
  // every bucket came after it.
  size_t during_backward = 0;
  for (size_t at : buckets) during_backward += at < last_matmul ? 1 : 0;
  CHECK(during_backward >= buckets.size() - 2);
}
