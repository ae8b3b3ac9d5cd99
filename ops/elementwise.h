#pragma once
// Builder helpers for the elementwise ops. Binary ops, comparisons and select
// broadcast their operands like numpy.
#include "engine/ir/builder.h"

namespace kiln::ops {

// Gradients: relu's is 0 at x == 0. pow's gradient for the base, y x^(y-1), holds
// wherever x^y is differentiable in x; for the exponent, x^y log(x), only for x > 0.
// maximum/minimum send the gradient to the winning operand and split it equally
// between both on ties. select sends it to the chosen operand (none to cond);
// cast passes it only from f32 to f32.

// Unary: f32 (neg also i32).
Value neg(Builder& b, Value x);
Value exp(Builder& b, Value x);
Value log(Builder& b, Value x);
Value sqrt(Builder& b, Value x);
Value rsqrt(Builder& b, Value x);  // 1 / sqrt(x)
Value tanh(Builder& b, Value x);
Value erf(Builder& b, Value x);
Value relu(Builder& b, Value x);

// Binary arithmetic: operands of one dtype, f32 or i32 (pow: f32).
// i32 div truncates toward zero, as C does.
Value add(Builder& b, Value x, Value y);
Value sub(Builder& b, Value x, Value y);
Value mul(Builder& b, Value x, Value y);
Value div(Builder& b, Value x, Value y);
Value pow(Builder& b, Value x, Value y);
Value maximum(Builder& b, Value x, Value y);
Value minimum(Builder& b, Value x, Value y);

// Comparisons: operands of one dtype, bool result (ordering: f32 or i32).
Value equal(Builder& b, Value x, Value y);
Value not_equal(Builder& b, Value x, Value y);
Value less(Builder& b, Value x, Value y);
Value less_equal(Builder& b, Value x, Value y);
Value greater(Builder& b, Value x, Value y);
Value greater_equal(Builder& b, Value x, Value y);

// Logic on bool.
Value logical_and(Builder& b, Value x, Value y);
Value logical_or(Builder& b, Value x, Value y);
Value logical_not(Builder& b, Value x);

// np.where(cond, x, y): cond bool; x and y of one dtype.
Value select(Builder& b, Value cond, Value x, Value y);

// Converts to `dtype`: to bool is x != 0; f32 to i32 truncates toward zero
// (saturating, NaN -> 0).
Value cast(Builder& b, Value x, DType dtype);

}  // namespace kiln::ops
