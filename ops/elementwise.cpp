// Elementwise ops: unary math, binary arithmetic, comparisons, logic, select, cast.
#include "ops/elementwise.h"

#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>
#include <xtensor/xvectorize.hpp>

#include "ops/families.h"
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

// C semantics without undefined behaviour: truncates toward zero, wraps
// INT_MIN / -1, and rejects division by zero.
int32_t int_div(int32_t x, int32_t y) {
  if (y == 0) throw Error("div: integer division by zero");
  if (y == -1) return static_cast<int32_t>(-static_cast<int64_t>(x));
  return x / y;
}

struct ElementwiseOp {
  const char* name;
  const char* summary;
  int operands;
  InferFn infer;
  ReferenceFn reference;
};

std::vector<ElementwiseOp> unary_ops() {
  return {
      {"neg", "-x", 1, same_type_infer(kNumeric), unary_kernel<float, int32_t>([](const auto& x) { return -x; })},
      {"exp", "e^x", 1, same_type_infer(kFloat), unary_kernel<float>([](const auto& x) { return xt::exp(x); })},
      {"log", "natural logarithm", 1, same_type_infer(kFloat),
       unary_kernel<float>([](const auto& x) { return xt::log(x); })},
      {"sqrt", "square root", 1, same_type_infer(kFloat),
       unary_kernel<float>([](const auto& x) { return xt::sqrt(x); })},
      {"rsqrt", "1 / sqrt(x)", 1, same_type_infer(kFloat),
       unary_kernel<float>([](const auto& x) { return 1.0f / xt::sqrt(x); })},
      {"tanh", "hyperbolic tangent", 1, same_type_infer(kFloat),
       unary_kernel<float>([](const auto& x) { return xt::tanh(x); })},
      {"relu", "max(x, 0)", 1, same_type_infer(kFloat),
       unary_kernel<float>([](const auto& x) { return xt::maximum(x, 0.0f); })},
      {"logical_not", "not x", 1, same_type_infer(kBool), unary_kernel<bool>([](const auto& x) { return !x; })},
  };
}

std::vector<ElementwiseOp> binary_ops() {
  const auto arith = broadcast_infer(kNumeric);
  const auto compare = broadcast_infer(kNumeric, DType::boolean);
  const auto compare_any = broadcast_infer(kAnyDType, DType::boolean);
  const auto logic = broadcast_infer(kBool);
  return {
      {"add", "x + y (broadcasting)", 2, arith,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x + y; })},
      {"sub", "x - y (broadcasting)", 2, arith,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x - y; })},
      {"mul", "x * y (broadcasting)", 2, arith,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x * y; })},
      {"div", "x / y (broadcasting; i32 truncates toward zero)", 2, arith,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) {
         if constexpr (std::is_same_v<typename std::decay_t<decltype(x)>::value_type, int32_t>)
           return xt::vectorize(int_div)(x, y);
         else
           return x / y;
       })},
      {"pow", "x ^ y (broadcasting)", 2, broadcast_infer(kFloat),
       binary_kernel<float>([](const auto& x, const auto& y) { return xt::pow(x, y); })},
      {"maximum", "elementwise max (broadcasting)", 2, arith,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return xt::maximum(x, y); })},
      {"minimum", "elementwise min (broadcasting)", 2, arith,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return xt::minimum(x, y); })},
      {"equal", "x == y (broadcasting)", 2, compare_any,
       binary_kernel<float, int32_t, bool>([](const auto& x, const auto& y) { return xt::equal(x, y); })},
      {"not_equal", "x != y (broadcasting)", 2, compare_any,
       binary_kernel<float, int32_t, bool>([](const auto& x, const auto& y) { return xt::not_equal(x, y); })},
      {"less", "x < y (broadcasting)", 2, compare,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x < y; })},
      {"less_equal", "x <= y (broadcasting)", 2, compare,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x <= y; })},
      {"greater", "x > y (broadcasting)", 2, compare,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x > y; })},
      {"greater_equal", "x >= y (broadcasting)", 2, compare,
       binary_kernel<float, int32_t>([](const auto& x, const auto& y) { return x >= y; })},
      {"logical_and", "x and y (broadcasting)", 2, logic,
       binary_kernel<bool>([](const auto& x, const auto& y) { return x && y; })},
      {"logical_or", "x or y (broadcasting)", 2, logic,
       binary_kernel<bool>([](const auto& x, const auto& y) { return x || y; })},
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

std::vector<TensorType> infer_cast(const std::vector<TensorType>& in, const Attrs& attrs) {
  return {{attrs.get_dtype("dtype"), in[0].shape}};
}

void cast_kernel(const KernelArgs& k) {
  for_dtype<float, int32_t, bool>(k.in[0]->dtype(), [&](auto from_tag) {
    using From = decltype(from_tag);
    for_dtype<float, int32_t, bool>(k.out[0]->dtype(), [&](auto to_tag) {
      using To = decltype(to_tag);
      store(*k.out[0], xt::vectorize([](From v) { return convert_element<To>(v); })(k.in[0]->as<From>()));
    });
  });
}

}  // namespace

void register_elementwise(OpRegistry& r) {
  for (const auto& table : {unary_ops(), binary_ops()})
    for (const ElementwiseOp& op : table)
      r.add(OpDef{op.name, op.summary, op.operands, op.operands, {}, op.infer, op.reference, {}, false});
  r.add(OpDef{"select", "np.where(cond, x, y) (broadcasting all three)", 3, 3, {}, infer_select, select_kernel, {},
              false});
  r.add(OpDef{"cast", "converts to {dtype}; f32 -> i32 truncates toward zero, -> bool is x != 0", 1, 1,
              {required_attr("dtype", AttrKind::dtype)}, infer_cast, cast_kernel, {}, false});
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
