#pragma once
// Accurate f32 sums. An f32 accumulator stops growing once its total is 2^24
// times its terms (1 added to 2^24 is lost), so a vector lane that sums 2^30
// ones returns 2^24. Every sum the JIT computes is therefore blocked: an f32
// accumulator (a vector lane, a chain) sums at most kSumBlock terms, the
// block's sum is then added into an f64 total, and the total is rounded to f32
// once, at the end. For n <= 2^36 f32 terms x_i the result s' satisfies
//
//   |s' - sum x_i| <= 2^-24 |sum x_i| + 2^-16 sum |x_i|
//
// (a block's f32 sum errs by at most (kSumBlock - 1) 2^-24 of its terms' sum
// of |x|, the f64 additions by at most n 2^-53 of all of it, and the final
// rounding by 2^-24 of the result). A float64 sum of the same terms (numpy's,
// the interpreter's) is within n 2^-53 sum |x_i| of the exact one. Summing in
// f64 throughout would convert every term; converting once per block costs
// nothing measurable (kiln bench's sum, softmax, layer_norm, cross_entropy), and
// 128 keeps a row of 512 (a Transformer's) one block: blocks of 32 made
// layer_norm 8% slower. tests/jit/accurate_sum_test.cpp checks the bound past
// 2^24 terms per lane.
#include <cstdint>
#include <functional>
#include <vector>

#include "compiler/codegen/lowering_context.h"

namespace kiln::compiler {

inline constexpr int64_t kSumBlock = 128;

// for_range(begin, end, step, init, body) in blocks of at most kSumBlock
// iterations. The accumulators marked in `sums` are f64 totals in `init` and in
// the result: `body` sees and returns them as f32 (of the same lane count),
// starting at 0 in each block, and after the block they are added into the
// total. The other accumulators (a max, an i32 sum) are carried as for_range
// carries them.
LoweringContext::Carried for_blocks(
    LoweringContext& cx, int64_t begin, int64_t end, int64_t step, const LoweringContext::Carried& init,
    const std::vector<bool>& sums,
    const std::function<LoweringContext::Carried(llvm::Value*, const LoweringContext::Carried&)>& body);

// 0.0 as the f64 total of sums of `width` lanes.
llvm::Value* zero_total(LoweringContext& cx, int width);

// A vector's lanes (f32 or f64) added up as a tree: reassociation allowed.
llvm::Value* add_lanes(LoweringContext& cx, llvm::Value* vec);

}  // namespace kiln::compiler
