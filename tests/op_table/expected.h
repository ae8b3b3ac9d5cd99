#pragma once
// Expected results for reference_test.cpp, stated independently of the
// reference kernels: an elementwise op as a scalar function applied with NumPy
// broadcasting to the operands' own element types (i32 widened to int64_t and
// wrapped back, as two's complement arithmetic does).
#include <type_traits>

#include "op_info.h"

namespace kiln::test {

// The broadcast shape of the operands' shapes (NumPy's rule).
Shape broadcast_shape(const std::vector<Tensor>& operands);

// For each flat index of `result`, the flat index of `operand` broadcast to it.
std::vector<size_t> broadcast_index(const Shape& operand, const Shape& result);

// f(x, ...) element by element over operands of one dtype; the result is bool
// where f returns bool, else of the operands' dtype.
template <class F>
ExpectedFn pointwise(F f) {
  return [f](const Sample& s) {
    const Shape shape = broadcast_shape(s.operands);
    std::vector<std::vector<size_t>> index;
    for (const Tensor& x : s.operands) index.push_back(broadcast_index(x.shape(), shape));
    return std::vector<Tensor>{s.operands[0].visit([&](const auto& first) -> Tensor {
      using T = typename std::decay_t<decltype(first)>::value_type;
      if constexpr (std::is_same_v<T, bfloat16>) {
        throw Error("pointwise: no elementwise op but cast takes bf16");
      } else {
        using Wide = std::conditional_t<std::is_same_v<T, int32_t>, int64_t, T>;
        const auto at = [&](size_t k, size_t i) {
          return static_cast<Wide>(s.operands[k].as<T>().data()[index[k][i]]);
        };
        const auto apply = [&](size_t i) {
          if constexpr (std::is_invocable_v<F, Wide>)
            return f(at(0, i));
          else
            return f(at(0, i), at(1, i));
        };
        using Out = std::conditional_t<std::is_same_v<decltype(apply(0)), bool>, bool, T>;
        xt::xarray<Out> out = xt::xarray<Out>::from_shape(xt_shape(shape));
        for (size_t i = 0; i < out.size(); ++i) out.data()[i] = static_cast<Out>(apply(i));
        return Tensor(std::move(out));
      }
    })};
  };
}

// select(cond, x, y) with the three broadcast.
std::vector<Tensor> expected_select(const Sample& s);

// cast {dtype}: f32 to i32 truncates toward zero, saturates, and takes nan to 0;
// to bool is x != 0 (nan included); the rest converts exactly.
std::vector<Tensor> expected_cast(const Sample& s);

}  // namespace kiln::test
