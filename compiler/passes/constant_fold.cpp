// Constant folding. A node with no side effect, no randomness and only constant
// operands (fill, iota, causal_mask, including fills this pass made) is evaluated
// with its op's reference kernel, as the Interpreter would run it, so folding is
// bit-exact against the Interpreter. The IR has no op for an arbitrary constant
// tensor, so only splat results are replaced, by a `fill`:
//   - elementwise ops of splats and shape ops of a splat, at any size: one element
//     is evaluated (every element of the result is that element);
//   - any other op when its result has at most kMaxFoldElements elements and each
//     operand at most kMaxOperandElements: evaluated in full, kept only if a splat.
#include "compiler/passes/constants.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {
namespace {

constexpr int64_t kMaxOperandElements = 4096;

// Never folded: side effects, collectives (every rank runs them), randomness
// (dropout), and fills, which are what this pass folds into.
bool foldable(const Node& n) {
  const OpDef& d = *n.def;
  return !d.side_effect && !d.collective && !d.random && d.reference && n.results.size() == 1 && n.op() != "fill";
}

// Runs the node's reference kernel on these operands into a result of `type`.
Tensor evaluate(const Node& n, const std::vector<Tensor>& operands, const TensorType& type) {
  std::vector<const Tensor*> in;
  for (const Tensor& t : operands) in.push_back(&t);
  Tensor result = Tensor::zeros(type);
  std::vector<Tensor*> out = {&result};
  n.def->reference(KernelArgs{in, out, n.attrs});
  return result;
}

// The splat value of the node's result, if it folds to one.
std::optional<double> fold(const Graph& g, const Node& n, const std::vector<Value>& ops, const TensorType& type) {
  std::vector<std::optional<double>> splats;
  bool all_splats = true;
  for (Value v : ops) {
    if (!is_constant(g, v)) return std::nullopt;
    splats.push_back(splat_value(g, v));
    all_splats = all_splats && splats.back().has_value();
  }
  // Elements moved: the same splat. Elementwise: the splat of one element.
  if (all_splats && n.def->moves_elements) return splats[0];
  if (all_splats && n.def->elementwise) {
    std::vector<Tensor> scalars;
    for (size_t i = 0; i < ops.size(); ++i) scalars.push_back(splat_tensor({g.type(ops[i]).dtype, {}}, *splats[i]));
    return common_value(evaluate(n, scalars, {type.dtype, {}}));
  }
  if (type.numel() == 0 || type.numel() > kMaxFoldElements) return std::nullopt;
  std::vector<Tensor> operands;
  for (Value v : ops) {
    if (g.type(v).numel() > kMaxOperandElements) return std::nullopt;
    operands.push_back(constant_tensor(g, v));
  }
  return common_value(evaluate(n, operands, type));
}

}  // namespace

Graph constant_fold(const Graph& g) {
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    std::optional<double> value;
    if (foldable(n)) {
      const TensorType& type = g.type(n.results[0]);
      try {
        value = fold(rw.target(), n, rw.mapped_operands(n), type);
      } catch (const Error&) {
        // A kernel that rejects its operands (e.g. an out-of-range gather index)
        // stays in the graph, to fail when it runs as it would have unfolded.
      }
      if (value) {
        const Attrs attrs{{"shape", type.shape}, {"value", *value}, {"dtype", type.dtype}};
        rw.replace(n.results[0], rw.emit(i, "fill", {}, attrs, g.name_of(n.results[0])));
        continue;
      }
    }
    rw.copy(i);
  }
  return rw.finish();
}

}  // namespace kiln::compiler
