// Converters of the ONNX math ops: elementwise, MatMul and Gemm, Softmax and
// LayerNormalization, reductions, Cast.
#include <onnx/onnx_pb.h>

#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/reduction.h"
#include "tools/onnx_import/converters.h"

namespace kiln::onnx {

namespace {

using Node = ::onnx::NodeProto;
using Results = std::vector<Operand>;

using Unary = Value (*)(Builder&, Value);
using Binary = Value (*)(Builder&, Value, Value);

Value scalar(ImportContext& c, double v) { return ops::fill(c.b(), {}, v); }

ConvertFn unary(Unary op) {
  return [op](ImportContext& c, const Node& n) { return Results{op(c.b(), c.value(n, 0))}; };
}

// ONNX's binary ops broadcast as numpy does, as kiln's do.
ConvertFn binary(Binary op) {
  return [op](ImportContext& c, const Node& n) { return Results{op(c.b(), c.value(n, 0), c.value(n, 1))}; };
}

// Max and Min take one or more operands.
ConvertFn variadic(Binary op) {
  return [op](ImportContext& c, const Node& n) {
    Value acc = c.value(n, 0);
    for (int i = 1; i < n.input_size(); ++i) acc = op(c.b(), acc, c.value(n, i));
    return Results{acc};
  };
}

// x^2 (torch's variance) as x * x: exact, and with no log(x) in its gradient. A
// one-element exponent of rank <= x's leaves x's shape unchanged.
Results pow(ImportContext& c, const Node& n) {
  const Value x = c.value(n, 0);
  if (c.is_constant(n, 1)) {
    const Constant& e = c.constant(n, 1);
    if (e.numel() == 1 && e.shape.size() <= c.type(n, 0).shape.size() && e.at(0) == 2.0)
      return {ops::mul(c.b(), x, x)};
  }
  Value y = c.value(n, 1);
  if (c.b().type(y).dtype != DType::f32) y = ops::cast(c.b(), y, DType::f32);
  return {ops::pow(c.b(), x, y)};
}

Results reciprocal(ImportContext& c, const Node& n) { return {ops::div(c.b(), scalar(c, 1.0), c.value(n, 0))}; }

Results sigmoid(ImportContext& c, const Node& n) {
  const Value e = ops::exp(c.b(), ops::neg(c.b(), c.value(n, 0)));
  return {ops::div(c.b(), scalar(c, 1.0), ops::add(c.b(), scalar(c, 1.0), e))};
}

// numpy's matmul: a 1-D operand is a row (lhs) or column (rhs), dropped from the result.
Results matmul(ImportContext& c, const Node& n) {
  Value a = c.value(n, 0), b = c.value(n, 1);
  const Shape sa = c.b().type(a).shape, sb = c.b().type(b).shape;
  if (sa.empty() || sb.empty()) fail(n, "MatMul of a scalar");
  if (sa.size() == 1) a = reshape(c, a, {1, sa[0]});
  if (sb.size() == 1) b = reshape(c, b, {sb[0], 1});
  const Value y = ops::matmul(c.b(), a, b);
  Shape out = c.b().type(y).shape;
  if (sb.size() == 1) out.pop_back();
  if (sa.size() == 1) out.erase(out.end() - (sb.size() == 1 ? 1 : 2));
  return {reshape(c, y, out)};
}

// alpha * op(A) @ op(B) + beta * C
Results gemm(ImportContext& c, const Node& n) {
  const bool ta = c.attr_int(n, "transA", 0) != 0, tb = c.attr_int(n, "transB", 0) != 0;
  const double alpha = c.attr_float(n, "alpha", 1.0), beta = c.attr_float(n, "beta", 1.0);
  Value y = ops::matmul(c.b(), c.value(n, 0), c.value(n, 1), ta, tb);
  if (alpha != 1.0) y = ops::mul(c.b(), y, scalar(c, alpha));
  if (c.has_input(n, 2) && beta != 0.0) {
    Value bias = c.value(n, 2);
    if (beta != 1.0) bias = ops::mul(c.b(), bias, scalar(c, beta));
    y = ops::add(c.b(), y, bias);
  }
  return {y};
}

// Before opset 13, Softmax and LogSoftmax flatten x to 2-D at `axis` (default 1)
// and normalize the rows; from 13 on, along `axis` (default -1).
ConvertFn softmax(Value (*op)(Builder&, Value, int64_t)) {
  return [op](ImportContext& c, const Node& n) {
    const Value x = c.value(n, 0);
    const Shape shape = c.b().type(x).shape;
    const int64_t rank = static_cast<int64_t>(shape.size());
    const int64_t axis = normalize_axis(c.attr_int(n, "axis", c.opset() >= 13 ? -1 : 1), rank);
    if (c.opset() >= 13 || axis == rank - 1) return Results{op(c.b(), x, axis)};
    const auto a = static_cast<size_t>(axis);
    const Value rows = reshape(c, x, {dims_product(shape, 0, a), dims_product(shape, a, shape.size())});
    return Results{reshape(c, op(c.b(), rows, -1), shape)};
  };
}

// kiln's layer_norm normalizes the last axis; ONNX's, every axis from `axis` on,
// so x is viewed as [outer, inner] when axis is not the last. The optional Mean
// and InvStdDev outputs (shape [d0, ..., d(axis-1), 1, ..., 1]) are computed
// beside it when the model uses them.
Results layer_normalization(ImportContext& c, const Node& n) {
  const Value x = c.value(n, 0);
  const Shape shape = c.b().type(x).shape;
  const auto axis = static_cast<size_t>(normalize_axis(c.attr_int(n, "axis", -1), static_cast<int64_t>(shape.size())));
  const int64_t inner = dims_product(shape, axis, shape.size());
  Shape rows(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(axis));
  rows.push_back(inner);
  auto row_param = [&](int i) {
    const Value v = c.value(n, i);
    if (c.b().type(v).numel() != inner)
      fail(n, "input " + std::to_string(i) + " has shape " + shape_str(c.b().type(v).shape) +
                  ", expected the normalized shape " +
                  shape_str(Shape(shape.begin() + static_cast<std::ptrdiff_t>(axis), shape.end())));
    return reshape(c, v, {inner});
  };
  const Value gamma = row_param(1);
  const Value beta = c.has_input(n, 2) ? row_param(2) : ops::fill(c.b(), {inner}, 0.0);
  const double eps = c.attr_float(n, "epsilon", 1e-5);
  // stash_type is the precision of the mean and variance: kiln's is f32 (1).
  if (const int64_t stash = c.attr_int(n, "stash_type", 1); stash != 1)
    fail(n, "stash_type " + std::to_string(stash) + " (the mean and variance in another precision than float)"
            " is not supported");
  const Value xr = reshape(c, x, rows);
  Results results{reshape(c, ops::layer_norm(c.b(), xr, gamma, beta, eps), shape)};
  if (n.output_size() > 1) {
    Builder& b = c.b();
    const auto last = static_cast<int64_t>(rows.size()) - 1;
    const Value mean = ops::mean(b, xr, {last}, true);
    const Value centered = ops::sub(b, xr, mean);
    const Value var = ops::mean(b, ops::mul(b, centered, centered), {last}, true);
    const Value inv_std_dev = ops::rsqrt(b, ops::add(b, var, scalar(c, eps)));
    Shape stats(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(axis));
    stats.resize(shape.size(), 1);
    results.push_back(reshape(c, mean, stats));
    results.push_back(reshape(c, inv_std_dev, stats));
  }
  return results;
}

// Axes from the attribute (or, for ReduceSum from opset 13, the second input);
// none means all, unless noop_with_empty_axes makes it the identity.
const std::vector<std::string> kReduceAttributes = {"axes", "keepdims", "noop_with_empty_axes"};

ConvertFn reduce(Value (*op)(Builder&, Value, std::vector<int64_t>, bool)) {
  return [op](ImportContext& c, const Node& n) {
    const std::vector<int64_t> axes = c.ints_from_input_or_attr(n, 1, "axes", {});
    const Value x = c.value(n, 0);
    if (axes.empty() && c.attr_int(n, "noop_with_empty_axes", 0) != 0) return Results{x};
    const bool keepdims = c.attr_int(n, "keepdims", 1) != 0;
    return Results{op(c.b(), x, axes, keepdims)};
  };
}

DType cast_target(const Node& n, int64_t to) {
  const std::optional<DType> dtype = to >= 0 && to <= INT32_MAX ? dtype_for_element_type(static_cast<int32_t>(to))
                                                                : std::nullopt;
  if (!dtype) {
    using P = ::onnx::TensorProto;
    const bool known = to >= 0 && to <= INT32_MAX && P::DataType_IsValid(static_cast<int>(to));
    const std::string name = known ? P::DataType_Name(static_cast<P::DataType>(to)) : std::to_string(to);
    fail(n, "cast to ONNX element type " + name + ", which kiln has no dtype for (f32, i32, bool)");
  }
  return *dtype;
}

Results cast(ImportContext& c, const Node& n) {
  if (!c.attr(n, "to")) fail(n, "attribute 'to' is missing");
  const DType to = cast_target(n, c.attr_int(n, "to", 0));
  const Value x = c.value(n, 0);
  if (c.b().type(x).dtype == to) return {x};
  return {ops::cast(c.b(), x, to)};
}

Results where(ImportContext& c, const Node& n) {
  return {ops::select(c.b(), c.value(n, 0), c.value(n, 1), c.value(n, 2))};
}

}  // namespace

std::vector<OpConverter> math_converters() {
  return {
      {"Relu", unary(ops::relu)},
      {"Tanh", unary(ops::tanh)},
      {"Sqrt", unary(ops::sqrt)},
      {"Exp", unary(ops::exp)},
      {"Log", unary(ops::log)},
      {"Neg", unary(ops::neg)},
      {"Erf", unary(ops::erf)},
      {"Not", unary(ops::logical_not)},
      {"Reciprocal", reciprocal},
      {"Sigmoid", sigmoid},
      {"Add", binary(ops::add)},
      {"Sub", binary(ops::sub)},
      {"Mul", binary(ops::mul)},
      {"Div", binary(ops::div)},
      {"Pow", pow},
      {"Equal", binary(ops::equal)},
      {"Less", binary(ops::less)},
      {"LessOrEqual", binary(ops::less_equal)},
      {"Greater", binary(ops::greater)},
      {"GreaterOrEqual", binary(ops::greater_equal)},
      {"And", binary(ops::logical_and)},
      {"Or", binary(ops::logical_or)},
      {"Max", variadic(ops::maximum)},
      {"Min", variadic(ops::minimum)},
      {"Where", where},
      {"Cast", cast, {"to"}},
      {"MatMul", matmul},
      {"Gemm", gemm, {"transA", "transB", "alpha", "beta"}},
      {"Softmax", softmax(ops::softmax), {"axis"}},
      {"LogSoftmax", softmax(ops::log_softmax), {"axis"}},
      {"LayerNormalization", layer_normalization, {"axis", "epsilon", "stash_type"}},
      {"ReduceMean", reduce(ops::mean), kReduceAttributes},
      {"ReduceSum", reduce(ops::sum), kReduceAttributes},
      {"ReduceMax", reduce(ops::max), kReduceAttributes},
  };
}

}  // namespace kiln::onnx
