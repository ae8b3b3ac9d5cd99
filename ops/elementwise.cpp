// Elementwise ops: unary math, binary arithmetic, comparisons, logic, select, cast.
#include "ops/elementwise.h"

#include <functional>
#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xvectorize.hpp>

#include "ops/constant.h"
#include "ops/families.h"
#include "ops/grad_util.h"
#include "ops/op_helpers.h"

namespace kiln::ops {

namespace {

// A kernel applying f to the operand arrays, all of one element type among Ts.
template <class... Ts, class F>
ReferenceFn unary_kernel(F f) {
  return [f](const KernelArgs& k) {
    for_dtype<Ts...>(k.in[0]->dtype(), [&](auto tag) {
      using T = decltype(tag);
      store(*k.out[0], f(k.in[0]->as<T>()));
    });
  };
}

template <class... Ts, class F>
ReferenceFn binary_kernel(F f) {
  return [f](const KernelArgs& k) {
    for_dtype<Ts...>(k.in[0]->dtype(), [&](auto tag) {
      using T = decltype(tag);
      store(*k.out[0], f(k.in[0]->as<T>(), k.in[1]->as<T>()));
    });
  };
}

// i32 arithmetic wraps around (two's complement), as the JIT's integer add, sub,
// mul and neg do: computed in uint32_t, where overflow is defined, not with
// int32_t's undefined behaviour. Other element types apply `op` as it is.
template <class Op>
auto wrapping(Op op) {
  return [op](const auto&... x) {
    using T = std::common_type_t<typename std::decay_t<decltype(x)>::value_type...>;
    auto wrap = [op](auto... v) { return static_cast<int32_t>(op(static_cast<uint32_t>(v)...)); };
    if constexpr (!std::is_same_v<T, int32_t>)
      return op(x...);
    else if constexpr (sizeof...(x) == 1)
      return xt::vectorize([wrap](int32_t a) -> int32_t { return wrap(a); })(x...);
    else
      return xt::vectorize([wrap](int32_t a, int32_t b) -> int32_t { return wrap(a, b); })(x...);
  };
}

// C semantics without undefined behaviour: truncates toward zero, wraps
// INT_MIN / -1, and rejects division by zero.
int32_t int_div(int32_t x, int32_t y) {
  if (y == 0) throw Error("div: integer division by zero");
  if (y == -1) return static_cast<int32_t>(-static_cast<int64_t>(x));
  return x / y;
}

// ---- gradient rules ----
// Written with differentiable builder ops only, so that grad of grad works.

Value scalar(Builder& b, double v) { return fill(b, Shape{}, v); }

// A rule for a one-operand op: dx = f(b, x, y, dy) with y the op's result.
template <class F>
GradientFn unary_grad(F f) {
  return [f](Builder& b, const Node& n, const std::vector<Value>& dy) {
    return std::vector<Value>{f(b, n.operands[0], n.results[0], dy[0])};
  };
}

// A rule for a broadcasting two-operand op: f(b, x, y, z, dz) gives both
// gradients in the broadcast shape of z; they are summed back to the operands' shapes.
template <class F>
GradientFn binary_grad(F f) {
  return [f](Builder& b, const Node& n, const std::vector<Value>& dz) {
    const Value x = n.operands[0], y = n.operands[1];
    const Shape &x_shape = b.type(x).shape, &y_shape = b.type(y).shape;
    const auto [dx, dy] = f(b, x, y, n.results[0], dz[0]);
    return std::vector<Value>{sum_to_shape(b, dx, x_shape), sum_to_shape(b, dy, y_shape)};
  };
}

using GradPair = std::pair<Value, Value>;

// maximum/minimum: the gradient goes to the operand that `wins` (is greater for
// maximum, less for minimum); on ties it is split equally between both, so
// maximum(x, x) has gradient 1 with respect to x, as for x itself.
GradientFn extremum_grad(Value (*wins)(Builder&, Value, Value)) {
  return binary_grad([wins](Builder& b, Value x, Value y, Value, Value dz) {
    const Value x_share = select(b, equal(b, x, y), scalar(b, 0.5), cast(b, wins(b, x, y), DType::f32));
    const Value dx = mul(b, dz, x_share);
    return GradPair{dx, sub(b, dz, dx)};
  });
}

struct ElementwiseOp {
  const char* name;
  const char* summary;
  int operands;
  InferFn infer;
  ReferenceFn reference;
  GradientFn gradient = {};  // none for ops with bool results (comparisons, logic): no gradient flows there
  std::function<bool(const std::vector<TensorType>&)> may_fail = {};
};

std::vector<ElementwiseOp> unary_ops() {
  return {
      {.name = "neg",
       .summary = "-x",
       .operands = 1,
       .infer = same_type_infer(kNumeric),
       .reference = unary_kernel<float, int32_t>(wrapping(std::negate<>())),
       .gradient = unary_grad([](Builder& b, Value, Value, Value dy) { return neg(b, dy); })},
      {.name = "exp",
       .summary = "e^x",
       .operands = 1,
       .infer = same_type_infer(kFloat),
       .reference = unary_kernel<float>([](const auto& x) { return xt::exp(x); }),
       .gradient = unary_grad([](Builder& b, Value, Value y, Value dy) { return mul(b, dy, y); })},
      {.name = "log",
       .summary = "natural logarithm",
       .operands = 1,
       .infer = same_type_infer(kFloat),
       .reference = unary_kernel<float>([](const auto& x) { return xt::log(x); }),
       .gradient = unary_grad([](Builder& b, Value x, Value, Value dy) { return div(b, dy, x); })},
      {.name = "sqrt",
       .summary = "square root",
       .operands = 1,
       .infer = same_type_infer(kFloat),
       .reference = unary_kernel<float>([](const auto& x) { return xt::sqrt(x); }),
       .gradient =
           unary_grad([](Builder& b, Value, Value y, Value dy) { return mul(b, div(b, dy, y), scalar(b, 0.5)); })},
      {.name = "rsqrt",
       .summary = "1 / sqrt(x)",
       .operands = 1,
       .infer = same_type_infer(kFloat),
       .reference = unary_kernel<float>([](const auto& x) { return 1.0f / xt::sqrt(x); }),
       // d/dx x^(-1/2) = -0.5 x^(-3/2) = -0.5 y / x
       .gradient = unary_grad(
           [](Builder& b, Value x, Value y, Value dy) { return mul(b, mul(b, dy, div(b, y, x)), scalar(b, -0.5)); })},
      {.name = "tanh",
       .summary = "hyperbolic tangent",
       .operands = 1,
       .infer = same_type_infer(kFloat),
       .reference = unary_kernel<float>([](const auto& x) { return xt::tanh(x); }),
       .gradient = unary_grad(
           [](Builder& b, Value, Value y, Value dy) { return mul(b, dy, sub(b, scalar(b, 1.0), mul(b, y, y))); })},
      {.name = "erf",
       .summary = "error function",
       .operands = 1,
       .infer = same_type_infer(kFloat),
       .reference = unary_kernel<float>([](const auto& x) { return xt::erf(x); }),
       // d/dx erf(x) = 2 / sqrt(pi) * exp(-x^2)
       .gradient = unary_grad([](Builder& b, Value x, Value, Value dy) {
         const Value slope = mul(b, exp(b, neg(b, mul(b, x, x))), scalar(b, 1.1283791670955126));
         return mul(b, dy, slope);
       })},
      {.name = "relu",
       .summary = "max(x, 0)",
       .operands = 1,
       .infer = same_type_infer(kFloat),
       .reference = unary_kernel<float>([](const auto& x) { return xt::maximum(x, 0.0f); }),
       // The gradient at the kink x == 0 is 0. It reads the result (y > 0 exactly
       // where x > 0), so the backward keeps no pre-activation and a matmul
       // epilogue can apply the ReLU.
       .gradient = unary_grad([](Builder& b, Value, Value y, Value dy) {
         return select(b, greater(b, y, scalar(b, 0.0)), dy, scalar(b, 0.0));
       })},
      {.name = "logical_not",
       .summary = "not x",
       .operands = 1,
       .infer = same_type_infer(kBool),
       .reference = unary_kernel<bool>([](const auto& x) { return !x; })},
  };
}

std::vector<ElementwiseOp> binary_ops() {
  const auto arith = broadcast_infer(kNumeric);
  const auto compare = broadcast_infer(kNumeric, DType::boolean);
  const auto compare_any = broadcast_infer(kAnyDType, DType::boolean);
  const auto logic = broadcast_infer(kBool);
  return {
      {.name = "add",
       .summary = "x + y (broadcasting)",
       .operands = 2,
       .infer = arith,
       .reference = binary_kernel<float, int32_t>(wrapping(std::plus<>())),
       .gradient = binary_grad([](Builder&, Value, Value, Value, Value dz) {
         return GradPair{dz, dz};
       })},
      {.name = "sub",
       .summary = "x - y (broadcasting)",
       .operands = 2,
       .infer = arith,
       .reference = binary_kernel<float, int32_t>(wrapping(std::minus<>())),
       .gradient = binary_grad([](Builder& b, Value, Value, Value, Value dz) {
         return GradPair{dz, neg(b, dz)};
       })},
      {.name = "mul",
       .summary = "x * y (broadcasting)",
       .operands = 2,
       .infer = arith,
       .reference = binary_kernel<float, int32_t>(wrapping(std::multiplies<>())),
       .gradient = binary_grad([](Builder& b, Value x, Value y, Value, Value dz) {
         return GradPair{mul(b, dz, y), mul(b, dz, x)};
       })},
      {.name = "div",
       .summary = "x / y (broadcasting; i32 truncates toward zero)",
       .operands = 2,
       .infer = arith,
       .reference = binary_kernel<float, int32_t>([](const auto& x, const auto& y) {
         if constexpr (std::is_same_v<typename std::decay_t<decltype(x)>::value_type, int32_t>)
           return xt::vectorize(int_div)(x, y);
         else
           return x / y;
       }),
       // z = x / y: dz/dx = 1 / y, dz/dy = -x / y^2 = -z / y
       .gradient = binary_grad([](Builder& b, Value, Value y, Value z, Value dz) {
         const Value dx = div(b, dz, y);
         return GradPair{dx, neg(b, mul(b, dx, z))};
       }),
       // An i32 division by zero is an error.
       .may_fail = [](const std::vector<TensorType>& in) { return in[0].dtype == DType::i32; }},
      {.name = "pow",
       .summary = "x ^ y (broadcasting)",
       .operands = 2,
       .infer = broadcast_infer(kFloat),
       .reference = binary_kernel<float>([](const auto& x, const auto& y) { return xt::pow(x, y); }),
       // z = x^y: dz/dx = y x^(y-1), right wherever x^y is differentiable in x
       // (also x < 0 with integer y). dz/dy = z log(x) is only defined for x > 0
       // (NaN for x < 0, where x^y is real only at integer y).
       .gradient = binary_grad([](Builder& b, Value x, Value y, Value z, Value dz) {
         const Value dx = mul(b, dz, mul(b, y, pow(b, x, sub(b, y, scalar(b, 1.0)))));
         return GradPair{dx, mul(b, dz, mul(b, z, log(b, x)))};
       })},
      {.name = "maximum",
       .summary = "elementwise max (broadcasting)",
       .operands = 2,
       .infer = arith,
       .reference = binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return xt::maximum(x, y); }),
       .gradient = extremum_grad(greater)},
      {.name = "minimum",
       .summary = "elementwise min (broadcasting)",
       .operands = 2,
       .infer = arith,
       .reference = binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return xt::minimum(x, y); }),
       .gradient = extremum_grad(less)},
      {.name = "equal",
       .summary = "x == y (broadcasting)",
       .operands = 2,
       .infer = compare_any,
       .reference = binary_kernel<float, int32_t, bool>([](const auto& x, const auto& y) { return xt::equal(x, y); })},
      {.name = "not_equal",
       .summary = "x != y (broadcasting)",
       .operands = 2,
       .infer = compare_any,
       .reference =
           binary_kernel<float, int32_t, bool>([](const auto& x, const auto& y) { return xt::not_equal(x, y); })},
      {.name = "less",
       .summary = "x < y (broadcasting)",
       .operands = 2,
       .infer = compare,
       .reference = binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x < y; })},
      {.name = "less_equal",
       .summary = "x <= y (broadcasting)",
       .operands = 2,
       .infer = compare,
       .reference = binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x <= y; })},
      {.name = "greater",
       .summary = "x > y (broadcasting)",
       .operands = 2,
       .infer = compare,
       .reference = binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x > y; })},
      {.name = "greater_equal",
       .summary = "x >= y (broadcasting)",
       .operands = 2,
       .infer = compare,
       .reference = binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x >= y; })},
      {.name = "logical_and",
       .summary = "x and y (broadcasting)",
       .operands = 2,
       .infer = logic,
       .reference = binary_kernel<bool>([](const auto& x, const auto& y) { return x && y; })},
      {.name = "logical_or",
       .summary = "x or y (broadcasting)",
       .operands = 2,
       .infer = logic,
       .reference = binary_kernel<bool>([](const auto& x, const auto& y) { return x || y; })},
  };
}

std::vector<TensorType> infer_select(const std::vector<TensorType>& in, const Attrs&) {
  check_dtype(in[0], kBool, "condition (operand 0)");
  check_same_dtype(in[1], in[2]);
  return {{in[1].dtype, broadcast_all({in[0].shape, in[1].shape, in[2].shape})}};
}

void select_kernel(const KernelArgs& k) {
  const auto& cond = k.in[0]->b8();
  for_dtype<float, int32_t, bool>(k.in[1]->dtype(), [&](auto tag) {
    using T = decltype(tag);
    store(*k.out[0], xt::where(cond, k.in[1]->as<T>(), k.in[2]->as<T>()));
  });
}

// No gradient for the condition; x and y get dz where they were chosen.
std::vector<Value> select_grad(Builder& b, const Node& n, const std::vector<Value>& dz) {
  const Value cond = n.operands[0];
  const Shape &x_shape = b.type(n.operands[1]).shape, &y_shape = b.type(n.operands[2]).shape;
  const Value zero = scalar(b, 0.0);
  return {Value{}, sum_to_shape(b, select(b, cond, dz[0], zero), x_shape),
          sum_to_shape(b, select(b, cond, zero, dz[0]), y_shape)};
}

std::vector<TensorType> infer_cast(const std::vector<TensorType>& in, const Attrs& attrs) {
  return {{attrs.get_dtype("dtype"), in[0].shape}};
}

void cast_kernel(const KernelArgs& k) {
  for_dtype<float, int32_t, bool, bfloat16>(k.in[0]->dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    for_dtype<float, int32_t, bool, bfloat16>(k.out[0]->dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      store(*k.out[0], xt::vectorize([](From v) { return convert_element<To>(v); })(k.in[0]->as<From>()));
    });
  });
}

// Only a cast between floating dtypes (f32, bf16) carries a gradient: the
// result's gradient cast back to the operand's dtype. Integers and bools have none.
std::vector<Value> cast_grad(Builder& b, const Node& n, const std::vector<Value>& dy) {
  const DType from = b.type(n.operands[0]).dtype, to = b.type(n.results[0]).dtype;
  if (!is_floating_point(from) || !is_floating_point(to)) return {Value{}};
  return {from == to ? dy[0] : cast(b, dy[0], from)};
}

}  // namespace

void register_elementwise(OpRegistry& r) {
  for (const auto& table : {unary_ops(), binary_ops()})
    for (const ElementwiseOp& op : table)
      r.add(OpDef{.name = op.name,
                  .summary = op.summary,
                  .min_operands = op.operands,
                  .max_operands = op.operands,
                  .infer = op.infer,
                  .reference = op.reference,
                  .gradient = op.gradient,
                  .elementwise = true,
                  .may_fail = op.may_fail,
                  .lowering = Lowering::elemental});
  r.add(OpDef{.name = "select",
              .summary = "np.where(cond, x, y) (broadcasting all three)",
              .min_operands = 3,
              .max_operands = 3,
              .infer = infer_select,
              .reference = select_kernel,
              .gradient = select_grad,
              .elementwise = true,
              .lowering = Lowering::elemental});
  r.add(OpDef{.name = "cast",
              .summary = "converts to {dtype}; f32 -> i32 truncates toward zero, -> bool is x != 0",
              .min_operands = 1,
              .max_operands = 1,
              .attrs = {required_attr("dtype", AttrKind::dtype)},
              .infer = infer_cast,
              .reference = cast_kernel,
              .gradient = cast_grad,
              .elementwise = true,
              .lowering = Lowering::elemental});
}

namespace {
Value attrless(Builder& b, const char* op, const std::vector<Value>& operands) { return b.emit1(op, operands); }
}  // namespace

Value neg(Builder& b, Value x) { return attrless(b, "neg", {x}); }
Value exp(Builder& b, Value x) { return attrless(b, "exp", {x}); }
Value log(Builder& b, Value x) { return attrless(b, "log", {x}); }
Value sqrt(Builder& b, Value x) { return attrless(b, "sqrt", {x}); }
Value rsqrt(Builder& b, Value x) { return attrless(b, "rsqrt", {x}); }
Value tanh(Builder& b, Value x) { return attrless(b, "tanh", {x}); }
Value erf(Builder& b, Value x) { return attrless(b, "erf", {x}); }
Value relu(Builder& b, Value x) { return attrless(b, "relu", {x}); }
Value add(Builder& b, Value x, Value y) { return attrless(b, "add", {x, y}); }
Value sub(Builder& b, Value x, Value y) { return attrless(b, "sub", {x, y}); }
Value mul(Builder& b, Value x, Value y) { return attrless(b, "mul", {x, y}); }
Value div(Builder& b, Value x, Value y) { return attrless(b, "div", {x, y}); }
Value pow(Builder& b, Value x, Value y) { return attrless(b, "pow", {x, y}); }
Value maximum(Builder& b, Value x, Value y) { return attrless(b, "maximum", {x, y}); }
Value minimum(Builder& b, Value x, Value y) { return attrless(b, "minimum", {x, y}); }
Value equal(Builder& b, Value x, Value y) { return attrless(b, "equal", {x, y}); }
Value not_equal(Builder& b, Value x, Value y) { return attrless(b, "not_equal", {x, y}); }
Value less(Builder& b, Value x, Value y) { return attrless(b, "less", {x, y}); }
Value less_equal(Builder& b, Value x, Value y) { return attrless(b, "less_equal", {x, y}); }
Value greater(Builder& b, Value x, Value y) { return attrless(b, "greater", {x, y}); }
Value greater_equal(Builder& b, Value x, Value y) { return attrless(b, "greater_equal", {x, y}); }
Value logical_and(Builder& b, Value x, Value y) { return attrless(b, "logical_and", {x, y}); }
Value logical_or(Builder& b, Value x, Value y) { return attrless(b, "logical_or", {x, y}); }
Value logical_not(Builder& b, Value x) { return attrless(b, "logical_not", {x}); }
Value select(Builder& b, Value cond, Value x, Value y) { return attrless(b, "select", {cond, x, y}); }
Value cast(Builder& b, Value x, DType dtype) { return b.emit1("cast", {x}, {{"dtype", dtype}}); }

}  // namespace kiln::ops
