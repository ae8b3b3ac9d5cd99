#pragma once
// The GEMM's shape limits that graph passes choose by: here, not in codegen/,
// so that a pass (passes/pretranspose_weights.cpp) need not depend on the
// emitters that use them (codegen/gemm.h).
#include <cstdint>

namespace kiln::compiler {

// At most this many rows of a row-major A (not transposed) times a B stored
// n x k (transposed) take the few-rows GEMM (codegen/gemm_rows.cpp), which
// reads B in place; the packed GEMM packs B into panels at every call.
inline constexpr int64_t kGemmRowsMaxM = 32;

}  // namespace kiln::compiler
