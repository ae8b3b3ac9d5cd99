// Algebraic simplification, one sweep in node order; rules see operands already
// rewritten, so chains collapse in one sweep (nodes left unused are dce's job).
// c, a, b: `fill` constants (splats); "=type" means only when the result's type
// equals x's (no broadcast widening and no dtype change).
//
//   identity(x)                      -> x            (finish() re-adds an identity only to carry an output's name)
//   x*1, 1*x, x/1                    -> x  =type
//   x+0, 0+x  (i32 0, or f32 -0.0)   -> x  =type     (not f32 +0.0: -0.0 + +0.0 is +0.0)
//   x-0       (i32 0, or f32 +0.0)   -> x  =type     (not f32 -0.0: -0.0 - -0.0 is +0.0)
//   neg(neg(x))                      -> x
//   cast(x, dtype of x)              -> x
//   transpose(x, identity perm)      -> x
//   transpose(transpose(x, p), q)    -> transpose(x, p∘q), or x if that is the identity
//   reshape(x) to x's shape          -> x
//   reshape(reshape(x))              -> reshape(x)   (the outer shape)
//   broadcast(x) to x's shape        -> x
//   broadcast(broadcast(x))          -> broadcast(x) (the outer shape)
//   (x*a)*b in any operand order     -> x*fill(a*b), or x if a*b is 1 =type   (f32; |a|, |b|, |a*b| in [2^-24, 2^24])
//                                       reassociation rounds differently: results agree to a few ulp, not bitwise
//
// Not rules, on purpose: x*0 -> 0 (nan*0 and inf*0 are nan), x-x -> 0 (likewise), x/x -> 1.
#include <cmath>
#include <map>
#include <optional>

#include "compiler/passes/constants.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {
namespace {

struct Site {
  GraphRewriter& rw;
  size_t index;            // of the source node
  const Node& node;        // the source node
  std::vector<Value> ops;  // its operands in the new graph
  const Graph& g() const { return rw.target(); }
  const TensorType& result_type() const { return rw.source().type(node.results[0]); }
  // The producer of operand i in the new graph, if it is a node of op `op`.
  const Node* operand_node(size_t i, const std::string& op) const {
    const Value v = ops[i];
    if (g().value(v).kind != ValueKind::result || g().producer(v).op() != op) return nullptr;
    return &g().producer(v);
  }
  bool same_type_as_result(Value x) const { return g().type(x) == result_type(); }
  bool is_splat(Value v, double value) const {
    const auto s = splat_value(g(), v);
    return s && *s == value && std::signbit(*s) == std::signbit(value);
  }
  const std::string& name() const { return rw.source().name_of(node.results[0]); }
};

using Rule = std::optional<Value> (*)(const Site&);

std::optional<Value> identity_rule(const Site& s) { return s.ops[0]; }

// op(x, c) -> x when c is the splat `value` (and for commutative ops, op(c, x) too).
std::optional<Value> drop_neutral(const Site& s, double value, bool commutative) {
  for (size_t i : {size_t{1}, size_t{0}}) {
    if (i == 0 && !commutative) break;
    const Value x = s.ops[1 - i];
    if (s.is_splat(s.ops[i], value) && s.same_type_as_result(x)) return x;
  }
  return std::nullopt;
}

std::optional<Value> div_rule(const Site& s) { return drop_neutral(s, 1.0, false); }

std::optional<Value> add_rule(const Site& s) {
  return drop_neutral(s, s.result_type().dtype == DType::f32 ? -0.0 : 0.0, true);
}

std::optional<Value> sub_rule(const Site& s) { return drop_neutral(s, 0.0, false); }

std::optional<Value> neg_rule(const Site& s) {
  if (const Node* inner = s.operand_node(0, "neg")) return inner->operands[0];
  return std::nullopt;
}

std::optional<Value> cast_rule(const Site& s) {
  if (s.same_type_as_result(s.ops[0])) return s.ops[0];
  return std::nullopt;
}

bool is_identity_perm(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::optional<Value> transpose_rule(const Site& s) {
  const std::vector<int64_t>& outer = s.node.attrs.get_ints("perm");
  if (is_identity_perm(outer)) return s.ops[0];
  const Node* inner = s.operand_node(0, "transpose");
  if (!inner) return std::nullopt;
  // Result dim i is the inner result's dim outer[i], which is x's dim inner[outer[i]].
  const std::vector<int64_t>& first = inner->attrs.get_ints("perm");
  std::vector<int64_t> perm;
  for (int64_t p : outer) perm.push_back(first[static_cast<size_t>(p)]);
  if (is_identity_perm(perm)) return inner->operands[0];
  return s.rw.emit(s.index, "transpose", {inner->operands[0]}, {{"perm", perm}}, s.name());
}

// reshape and broadcast: to x's own shape is x; of the same op, one node with the outer shape.
std::optional<Value> collapse_shape_op(const Site& s) {
  if (s.same_type_as_result(s.ops[0])) return s.ops[0];
  const Node* inner = s.operand_node(0, s.node.op());
  if (!inner) return std::nullopt;
  const Value x = inner->operands[0];
  if (s.same_type_as_result(x)) return x;
  return s.rw.emit(s.index, s.node.op(), {x}, s.node.attrs, s.name());
}

// Factors whose product can be taken first without overflow, underflow or subnormals in it.
bool safe_factor(double v) { return std::fabs(v) >= 0x1p-24 && std::fabs(v) <= 0x1p24; }

// (x*a)*b -> x*(a*b), with a and b splats, in any operand order.
std::optional<Value> reassociate_mul(const Site& s) {
  if (s.result_type().dtype != DType::f32) return std::nullopt;
  for (size_t outer_c : {size_t{1}, size_t{0}}) {
    const auto b = splat_value(s.g(), s.ops[outer_c]);
    const Node* inner = s.operand_node(1 - outer_c, "mul");
    if (!b || !inner) continue;
    for (size_t inner_c : {size_t{1}, size_t{0}}) {
      const auto a = splat_value(s.g(), inner->operands[inner_c]);
      if (!a) continue;
      const float product = static_cast<float>(*a) * static_cast<float>(*b);
      if (!safe_factor(*a) || !safe_factor(*b) || !safe_factor(product)) continue;
      const Value x = inner->operands[1 - inner_c];
      if (product == 1.0f && s.same_type_as_result(x)) return x;  // x*(a*b) would be x*1
      const Shape shape =
          broadcast_shapes(s.g().type(inner->operands[inner_c]).shape, s.g().type(s.ops[outer_c]).shape);
      const Value c = s.rw.emit(s.index, "fill", {},
                                {{"shape", shape}, {"value", static_cast<double>(product)}, {"dtype", DType::f32}},
                                s.name() + ".c");
      return s.rw.emit(s.index, "mul", {x, c}, {}, s.name());
    }
  }
  return std::nullopt;
}

std::optional<Value> mul_rule(const Site& s) {
  if (auto x = drop_neutral(s, 1.0, true)) return x;
  return reassociate_mul(s);
}

Rule rule_for(const std::string& op) {
  static const std::map<std::string, Rule> rules = {
      {"identity", identity_rule},
      {"mul", mul_rule},
      {"div", div_rule},
      {"add", add_rule},
      {"sub", sub_rule},
      {"neg", neg_rule},
      {"cast", cast_rule},
      {"transpose", transpose_rule},
      {"reshape", collapse_shape_op},
      {"broadcast", collapse_shape_op},
  };
  const auto it = rules.find(op);
  return it == rules.end() ? nullptr : it->second;
}

}  // namespace

Graph simplify(const Graph& g) {
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    const Rule rule = n.results.size() == 1 ? rule_for(n.op()) : nullptr;
    std::optional<Value> replacement;
    if (rule) replacement = rule(Site{rw, i, n, rw.mapped_operands(n)});
    if (replacement)
      rw.replace(n.results[0], *replacement);
    else
      rw.copy(i);
  }
  return rw.finish();
}

}  // namespace kiln::compiler
