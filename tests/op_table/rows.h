#pragma once
// The op table's rows, one function per op family (rows_<family>.cpp).
#include <vector>

#include "op_info.h"

namespace kiln::test {

// What the rows share: results bit for bit, and the dtype lists of their operands.
inline constexpr Tolerance kExact{0, 0};
inline const std::vector<DType> kFloat = {DType::f32};
inline const std::vector<DType> kAll = {DType::f32, DType::i32, DType::boolean};
// Every dtype: an operand's dtypes outside its row's list must be refused.
inline const std::vector<DType> kEveryDType = {DType::f32, DType::i32, DType::boolean, DType::bf16};

std::vector<OpInfo> elementwise_rows();
std::vector<OpInfo> reduction_rows();
std::vector<OpInfo> normalization_rows();
std::vector<OpInfo> shape_rows();
std::vector<OpInfo> constant_rows();
std::vector<OpInfo> gather_rows();
std::vector<OpInfo> matmul_rows();
std::vector<OpInfo> loss_rows();
std::vector<OpInfo> attention_rows();
std::vector<OpInfo> dropout_rows();
std::vector<OpInfo> graph_rows();  // assign and fusion
std::vector<OpInfo> collective_rows();  // allreduce

}  // namespace kiln::test
