// linear-cross-entropy: a loss written out over an output projection,
//
//   %logits = matmul(%h, %w) {transpose_b=true}   [..., V], %w [V, D] (tied embeddings)
//           | matmul(%h, %w)                      %w [D, V]: read through a transpose
//   %loss   = cross_entropy(%logits, %labels)
//
// becomes %loss = linear_cross_entropy(%h', %w', %labels') (ops/loss.h), with
// %h' the rows of %h as [N, D] and %labels' as [N], which never writes the
// [N, V] logits. The logits must be read by nothing else: in a training graph
// the backward reads them (softmax(%logits)), so there the model builds
// linear_cross_entropy itself and autodiff takes its gradient rule, as with
// flash-attention. One remark per cross_entropy: rewritten, or why not. The
// matmul it leaves unread goes in dce.
//
// And a training step's pair, linear_cross_entropy then its gradient
// linear_cross_entropy_backward(.., %lse, %dloss), becomes one
// linear_cross_entropy_train(%h, %w, %labels, %dloss), which makes the logits once
// instead of twice, where %dloss does not depend on the loss (autodiff's seed is
// a constant 1), %lse is read by the backward alone, and whatever reads the loss
// comes after the backward (where the train op stands). One remark per pair.
#include <map>
#include <ostream>
#include <set>
#include <vector>

#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace kiln::compiler {
namespace {

// Why cross_entropy node `ce` cannot take the fused op ("" if it can).
std::string why_not(const Graph& g, const Node& ce, const std::vector<int>& reads) {
  const Value logits = ce.operands[0];
  if (g.value(logits).kind != ValueKind::result || g.producer(logits).op() != "matmul")
    return "its logits are not a matmul's result";
  const Node& mm = g.producer(logits);
  if (reads[static_cast<size_t>(logits.id)] != 1)
    return "%" + g.name_of(logits) + " is read elsewhere too (a training graph's backward: build "
           "linear_cross_entropy before differentiating, as the Transformer does)";
  if (mm.attrs.get_bool("transpose_a")) return "the matmul reads %" + g.name_of(mm.operands[0]) + " transposed";
  const TensorType &h = g.type(mm.operands[0]), &w = g.type(mm.operands[1]);
  if (h.dtype != DType::f32 || w.dtype != DType::f32) return "the matmul's operands are not f32";
  if (w.shape.size() != 2) return "the projection %" + g.name_of(mm.operands[1]) + " is not a matrix (rank 2)";
  if (h.shape.size() < 2) return "%" + g.name_of(mm.operands[0]) + " has no rows";
  return "";
}

// Why backward node `j` cannot join its forward node `f` ("" if it can).
std::string why_not_train(const Graph& g, size_t f, size_t j, const std::vector<int>& reads) {
  const Node &fwd = g.nodes()[f], &bwd = g.nodes()[j];
  if (g.producer(bwd.operands[3]).op() != "linear_cross_entropy") return "its lse is not linear_cross_entropy's";
  for (size_t i = 0; i < 3; ++i)
    if (fwd.operands[i] != bwd.operands[i]) return "it reads other h, w or labels than the forward";
  if (!(fwd.attrs == bwd.attrs)) return "its attributes differ from the forward's";
  if (reads[static_cast<size_t>(bwd.operands[3].id)] != 1) return "%" + g.name_of(bwd.operands[3]) + " is read elsewhere too";
  // The values that depend on the forward's results, in node order.
  std::vector<bool> after(g.num_values(), false);
  for (Value r : fwd.results) after[static_cast<size_t>(r.id)] = true;
  for (size_t i = f + 1; i < j; ++i) {
    const Node& n = g.nodes()[i];
    bool depends = false;
    for (Value v : n.operands) depends = depends || after[static_cast<size_t>(v.id)];
    for (Value r : n.results) after[static_cast<size_t>(r.id)] = depends;
  }
  if (after[static_cast<size_t>(bwd.operands[4].id)]) return "its dloss depends on the loss";
  for (size_t i = f + 1; i < j; ++i)
    for (Value v : g.nodes()[i].operands)
      if (v == fwd.results[0])
        return "%" + g.name_of(g.nodes()[i].results[0]) + " reads the loss before its gradient is made";
  return "";
}

}  // namespace

Graph rewrite_linear_cross_entropy(const Graph& g, std::ostream* remarks) {
  std::vector<int> reads(g.num_values(), 0);
  for (const Node& n : g.nodes())
    for (Value v : n.operands) ++reads[static_cast<size_t>(v.id)];
  for (Value v : g.outputs()) ++reads[static_cast<size_t>(v.id)];

  // Forward node -> its backward node, for the pairs that become one train op.
  std::map<size_t, size_t> pairs;
  std::set<size_t> backward_of_pair;
  for (size_t j = 0; j < g.nodes().size(); ++j) {
    const Node& bwd = g.nodes()[j];
    if (bwd.op() != "linear_cross_entropy_backward") continue;
    const Value lse = bwd.operands[3];
    const std::string why = g.value(lse).kind != ValueKind::result
                                ? "its lse is not linear_cross_entropy's"
                                : why_not_train(g, static_cast<size_t>(g.value(lse).node), j, reads);
    if (why.empty()) {
      pairs[static_cast<size_t>(g.value(lse).node)] = j;
      backward_of_pair.insert(j);
    } else if (remarks) {
      *remarks << "linear-cross-entropy: the gradient %" << g.name_of(bwd.results[0]) << " stays apart: " << why
               << "\n";
    }
  }

  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& ce = g.nodes()[i];
    if (pairs.count(i)) continue;  // made with its backward, below
    if (backward_of_pair.count(i)) {
      const Node& fwd = g.producer(ce.operands[3]);
      const std::vector<Value> operands = {rw.map(ce.operands[0]), rw.map(ce.operands[1]), rw.map(ce.operands[2]),
                                           rw.map(ce.operands[4])};
      const std::vector<Value> r =
          rw.emit_results(i, "linear_cross_entropy_train", operands, ce.attrs,
                          {g.name_of(fwd.results[0]), g.name_of(ce.results[0]), g.name_of(ce.results[1])});
      rw.merge_location(r[0], fwd.loc);
      rw.replace(fwd.results[0], r[0]);
      rw.replace(ce.results[0], r[1]);
      rw.replace(ce.results[1], r[2]);
      if (remarks)
        *remarks << "linear-cross-entropy: %" << g.name_of(fwd.results[0]) << " and its gradient %"
                 << g.name_of(ce.results[0]) << ", %" << g.name_of(ce.results[1])
                 << " = linear_cross_entropy_train(...): the logits are made once\n";
      continue;
    }
    if (ce.op() != "cross_entropy") {
      rw.copy(i);
      continue;
    }
    const std::string& name = g.name_of(ce.results[0]);
    if (const std::string why = why_not(g, ce, reads); !why.empty()) {
      if (remarks) *remarks << "linear-cross-entropy: %" << name << " stays as written: " << why << "\n";
      rw.copy(i);
      continue;
    }
    const Node& mm = g.producer(ce.operands[0]);
    const Shape& h_shape = g.type(mm.operands[0]).shape;
    const int64_t d = h_shape.back(), n = g.type(ce.operands[1]).numel();
    Value h = rw.map(mm.operands[0]), w = rw.map(mm.operands[1]);
    if (h_shape.size() != 2) h = rw.emit(i, "reshape", {h}, {{"shape", std::vector<int64_t>{n, d}}}, name + "_rows");
    if (!mm.attrs.get_bool("transpose_b"))
      w = rw.emit(i, "transpose", {w}, {{"perm", std::vector<int64_t>{1, 0}}}, g.name_of(mm.operands[1]) + "_t");
    Value labels = rw.map(ce.operands[1]);
    if (g.type(ce.operands[1]).shape != Shape{n})
      labels = rw.emit(i, "reshape", {labels}, {{"shape", std::vector<int64_t>{n}}}, name + "_labels");
    const std::vector<Value> r =
        rw.emit_results(i, "linear_cross_entropy", {h, w, labels}, ce.attrs, {name, name + "_lse"});
    rw.inherit_locations(r[0], ce.results[0], {mm.operands[0], mm.operands[1], ce.operands[1]});
    rw.replace(ce.results[0], r[0]);
    if (remarks)
      *remarks << "linear-cross-entropy: %" << name << " = linear_cross_entropy(%" << g.name_of(mm.operands[0])
               << ", %" << g.name_of(mm.operands[1]) << (mm.attrs.get_bool("transpose_b") ? "" : " transposed")
               << ", %" << g.name_of(ce.operands[1]) << "): the logits %" << g.name_of(ce.operands[0]) << " "
               << shape_str(g.type(ce.operands[0]).shape) << " are never written\n";
  }
  return rw.finish();
}

}  // namespace kiln::compiler
