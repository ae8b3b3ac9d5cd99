// bf16-saves (--precision bf16, after bf16-matmuls): what the backward pass
// keeps of attention and layer norms is stored in bf16, at half the bytes.
// These are the largest activations left in f32 once the matmuls' operands are
// bf16 copies:
// - flash_attention's q, k and v, which its backward reads again, are rounded
//   before the forward reads them (the two products take bf16 operands, as a
//   matmul's do; the cast fuses into the loop that splits the heads, so no f32
//   copy is written), and the backward's o is a bf16 copy of the forward's.
//   Only where a flash_attention_backward reads the same q, k, v: an inference
//   graph keeps nothing, and rounding would only cost a cast.
// - a layer norm's input x, which its backward reads to recompute
//   x_hat = (x - mean) * rstd: that subtraction reads a bf16 copy of x widened
//   (the forward normalizes the f32 x; mean and rstd stay f32), so the f32 x is
//   free once the layer norm has read it.
#include <ostream>
#include <set>

#include "compiler/passes/bf16_copies.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace kiln::compiler {

namespace {

// The node that makes v; null for a declaration.
const Node* made_by(const Graph& g, Value v) {
  return g.value(v).kind == ValueKind::result ? &g.producer(v) : nullptr;
}

// The value a chain of reshapes starts from.
Value through_reshapes(const Graph& g, Value v) {
  while (const Node* n = made_by(g, v)) {
    if (n->op() != "reshape") break;
    v = n->operands[0];
  }
  return v;
}

bool is_f32(const Graph& g, Value v) { return g.type(v).dtype == DType::f32; }

// Layer norms' inputs x that a backward reads as sub(x, mean) (mean: result 1
// of the layer norm of x, through reshapes), with those sub nodes.
struct LayerNormSaves {
  std::set<Value> inputs;
  std::set<const Node*> recomputes;
};

LayerNormSaves layer_norm_saves(const Graph& g) {
  LayerNormSaves s;
  for (const Node& n : g.nodes()) {
    if (n.op() != "sub") continue;
    const Node* norm = made_by(g, through_reshapes(g, n.operands[1]));
    if (norm && norm->op() == "layer_norm" && norm->results[1] == through_reshapes(g, n.operands[1]) &&
        norm->operands[0] == n.operands[0] && is_f32(g, n.operands[0])) {
      s.inputs.insert(n.operands[0]);
      s.recomputes.insert(&n);
    }
  }
  return s;
}

// The (q, k, v) that a flash_attention_backward reads.
std::set<std::vector<Value>> attention_saves(const Graph& g) {
  std::set<std::vector<Value>> s;
  for (const Node& n : g.nodes())
    if (n.op() == "flash_attention_backward" && is_f32(g, n.operands[0]))
      s.insert({n.operands[0], n.operands[1], n.operands[2]});
  return s;
}

}  // namespace

Graph bf16_saves(const Graph& g, std::ostream* remarks) {
  const LayerNormSaves norms = layer_norm_saves(g);
  const std::set<std::vector<Value>> attentions = attention_saves(g);
  GraphRewriter rw(g);
  Bf16Copies rounded(rw);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    std::vector<Value> operands = rw.mapped_operands(n);
    if (n.op() == "flash_attention" && attentions.count({n.operands[0], n.operands[1], n.operands[2]})) {
      for (size_t k = 0; k < 3; ++k) operands[k] = rounded.of(i, operands[k]);
      const std::vector<Value> r = rw.emit_results(i, n.op(), operands, n.attrs,
                                                   {g.name_of(n.results[0]), g.name_of(n.results[1])});
      rw.replace(n.results[0], r[0]);
      rw.replace(n.results[1], r[1]);
      rounded.of(i, r[0]);  // o, for the backward
      if (remarks)
        *remarks << "bf16-saves: %" << g.name_of(n.results[0]) << " = flash_attention(%" << g.name_of(n.operands[0])
                 << ", %" << g.name_of(n.operands[1]) << ", %" << g.name_of(n.operands[2])
                 << "): q, k, v in bf16, and o kept for the backward in bf16\n";
      continue;
    }
    if (n.op() == "flash_attention_backward" && rounded.has(operands[0]) && rounded.has(operands[4])) {
      for (size_t k : {0, 1, 2, 4}) operands[k] = rounded.of(i, operands[k]);
      const std::vector<Value> r = rw.emit_results(
          i, n.op(), operands, n.attrs, {g.name_of(n.results[0]), g.name_of(n.results[1]), g.name_of(n.results[2])});
      for (size_t k = 0; k < 3; ++k) rw.replace(n.results[k], r[k]);
      continue;
    }
    if (norms.recomputes.count(&n)) {
      const Value wide = rounded.widened(i, operands[0], g.name_of(n.operands[0]));
      rw.replace(n.results[0], rw.emit(i, n.op(), {wide, operands[1]}, n.attrs, g.name_of(n.results[0])));
      if (remarks)
        *remarks << "bf16-saves: %" << g.name_of(n.results[0]) << " = sub(%" << g.name_of(n.operands[0])
                 << ", mean) reads the layer norm input's bf16 copy\n";
      continue;
    }
    rw.copy(i);
    if (n.op() == "layer_norm" && norms.inputs.count(n.operands[0])) rounded.of(i, operands[0]);
  }
  return rw.finish();
}

}  // namespace kiln::compiler
