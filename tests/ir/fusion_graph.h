#pragma once
// A seeded generator of valid graphs biased toward what the fusion pass touches,
// for differential fuzzing of the compiler: random compositions of motifs
//   - attention chains: matmul(q, k) under each way of writing k^T, * scale,
//     + an additive mask with -inf entries (causal, padding, per-row) and a row
//     masked entirely, softmax, matmul with v; or the flash_attention op;
//   - reductions (sum, mean, max over random axes, keepdims or not) with
//     elementwise producers and consumers, two of them sharing a producer;
//   - softmax, log_softmax and layer_norm with producers and consumers;
//   - matmuls with epilogues (bias add, scale, relu, residual add) in any order,
//     and linear layers x w + b of params (their gradients one GEMM);
//   - reshapes, transposes and slices between fused ops; i32 chains (an i32
//     division by an input that may be 0 included: a run-time error);
// over shapes of scalars, size-1 dims and sizes off the vector widths, where a
// motif's operands are often values that earlier motifs made (one producer
// feeding several fusions, outputs and assigns to state; a state's update
// blending in its old value, reading it at other indices, or two states
// swapping values, which tests updates in place). Some graphs get the
// backward pass of a scalar loss (sum(y * r), mean(y * y) or cross_entropy;
// engine/autodiff grad) and SGD or momentum updates of their params, as a
// training step's joint graph does.
#include <cstdint>

#include "engine/ir/graph.h"
#include "ir/random_graph.h"

namespace kiln::test {

struct FusionGraphOptions {
  int motifs = 4;              // motifs composed per graph
  double joint = 0.4;          // chance of a backward pass and updates
  int64_t max_numel = 6000;    // of any value
};

// The same seed and options give the same graph. Register the ops first.
Graph fusion_graph(uint64_t seed, const FusionGraphOptions& options = {});

}  // namespace kiln::test
