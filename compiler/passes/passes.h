#pragma once
// The built-in graph passes. Each is a functional rewrite (source graph in, new
// graph out) that keeps pass_manager.h's invariants; each lives in its own file.
#include <cstdint>
#include <iosfwd>

#include "engine/ir/graph.h"

namespace kiln::compiler {

// Evaluates nodes of constants whose result is a splat and replaces them by a `fill`.
Graph constant_fold(const Graph& g);
// The result size up to which constant_fold evaluates an op of constants in full;
// elementwise and shape ops of splats fold at any size (one element is evaluated).
inline constexpr int64_t kMaxFoldElements = 64;

// Algebraic simplification (x*1, transpose pairs, reshape chains, ...): simplify.cpp's table.
Graph simplify(const Graph& g);

// Common subexpression elimination: merges nodes with the same op, operands, attributes and result types.
Graph cse(const Graph& g);

// Dead code elimination: drops nodes whose results reach no output and no assign.
Graph dce(const Graph& g);

// matmul(transpose(x), y) -> matmul(x, y) {transpose_a}, likewise for y: the
// transpose flags read the operand in place (transpose_folding.cpp).
Graph fold_transposes(const Graph& g);

// matmul(a, w) -> matmul(a, transpose(w)) {transpose_b} where w is (through
// ops that only move elements) a param the graph never assigns and a has at
// most kGemmRowsMaxM rows (gemm_shapes.h): the transpose runs once per binding
// of the params (the program's run-invariant calls), and the product reads it
// in place without packing; one remark line per product by such a param,
// rewritten or not and why (pretranspose_weights.cpp).
Graph pretranspose_weights(const Graph& g, std::ostream* remarks = nullptr);

// softmax(q kᵀ * c + mask) v, written out, -> flash_attention(q, k, v, mask)
// {scale=c} where the chain's values are read by nothing else, reading q, k, v
// and writing the result in the projections' layout when they are split into
// and merged from heads around it; one remark line per softmax-weighted matmul,
// rewritten or not and why (flash_attention.cpp).
Graph rewrite_flash_attention(const Graph& g, std::ostream* remarks = nullptr);

// cross_entropy(matmul(h, w) {transpose_b}, labels), written out, ->
// linear_cross_entropy(h, w, labels) where the logits are read by nothing else
// (w [D, V] through a transpose; h's rows as [N, D]): the [N, V] logits are never
// written; one remark line per cross_entropy, rewritten or not and why
// (linear_cross_entropy.cpp).
Graph rewrite_linear_cross_entropy(const Graph& g, std::ostream* remarks = nullptr);

// matmul(a, b) of f32 -> matmul(cast(a, bf16), cast(b, bf16)), f32 result, one
// cast per value (--precision bf16; not in the default pipeline: the compiler
// pipeline adds it after the rewrites, compiler/pipeline.h); one remark line per
// product (bf16_matmuls.cpp).
Graph bf16_matmuls(const Graph& g, std::ostream* remarks = nullptr);
// After bf16-matmuls: flash_attention's q, k, v (and the backward's o) and a
// layer norm's input as its backward reads it, stored in bf16 where a backward
// keeps them (--precision bf16; bf16_saves.cpp).
Graph bf16_saves(const Graph& g, std::ostream* remarks = nullptr);

// Operator fusion: fusion.h.

// Horizontal fusion (XLA's horizontal_loop_fusion.cc): the loop fusions whose
// every result only goes to assigns (an optimizer's update of each param and its
// moments) become one `horizontal` fusion at the end of the step: one kernel,
// one pass over each param, its gradient and its moments
// (horizontal_fusion.cpp).
Graph horizontal_fusion(const Graph& g);

// The allreduces of a data-parallel step in buckets of about `bucket_bytes`,
// each placed right after its last operand is made (allreduce_buckets.cpp says
// how and why); one remark line per bucket. DDP's default bucket is 25 MiB for
// GPUs and fast networks; kiln's steps are smaller, and a smaller bucket lets
// the first sums start earlier in the backward pass.
inline constexpr int64_t kAllreduceBucketBytes = int64_t{4} << 20;
Graph allreduce_buckets(const Graph& g, std::ostream* remarks = nullptr,
                        int64_t bucket_bytes = kAllreduceBucketBytes);

}  // namespace kiln::compiler
