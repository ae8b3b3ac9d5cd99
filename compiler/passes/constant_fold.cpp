// Constant folding. A node with no side effect, no randomness and only constant
// operands (fill, iota, causal_mask, including fills this pass made) is evaluated
// with its op's reference kernel, as the Interpreter would run it, so folding is
// bit-exact against the Interpreter. The IR has no op for an arbitrary constant
// tensor, so only splat results are replaced, by a `fill`:
//   - elementwise ops of splats and shape ops of a splat, at any size: one element
//     is evaluated (every element of the result is that element);
//   - any other op when its result has at most kMaxFoldElements elements and each
//     operand at most kMaxOperandElements: evaluated in full, kept only if a splat.
#include <set>

#include "compiler/passes/constants.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {
namespace {

constexpr int64_t kMaxOperandElements = 4096;

// Ops whose every result element depends only on the operand elements at the same
// (broadcast) index: with splat operands the result is the splat of one element.
bool is_elementwise(const std::string& op) {
  static const std::set<std::string> ops = {
      "neg",         "exp",        "log",         "sqrt",   "rsqrt",      "tanh",    "erf",
      "relu",        "add",        "sub",         "mul",    "div",        "pow",     "maximum",
      "minimum",     "equal",      "not_equal",   "less",   "less_equal", "greater", "greater_equal",
      "logical_and", "logical_or", "logical_not", "select", "cast"};
  return ops.count(op) != 0;
}

// Ops that only move elements around: a splat stays the same splat.
bool moves_elements(const std::string& op) {
  static const std::set<std::string> ops = {"reshape", "transpose", "broadcast", "slice", "identity", "stop_gradient"};
  return ops.count(op) != 0;
}

// Never folded: side effects, collectives (every rank runs them), randomness
// (dropout), and nodes already constant.
bool foldable(const Node& n) {
  return !n.def->side_effect && !n.def->collective && n.def->reference && n.results.size() == 1 && n.op() != "dropout" && n.op() != "fill";
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
  if (all_splats && moves_elements(n.op())) return splats[0];
  if (all_splats && is_elementwise(n.op())) {
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
