// dropout as an elemental generator: the Philox4x32-10 mask of
// engine/tensor/philox.h computed in IR, so the JIT draws bit for bit the mask
// the interpreter draws. One Philox call gives the words of 4 consecutive
// elements, so W lanes need only W/4 + 1 calls (one more for a start that is not
// a multiple of 4): they run as one vector of counters, and each lane then takes
// its word. The round keys depend only on the seed attribute and are folded to
// constants.
#include <array>

#include "compiler/codegen/families.h"
#include "engine/tensor/philox.h"
#include "ops/dropout.h"

namespace kiln::compiler {

namespace {

using Words = std::array<llvm::Value*, 4>;

// The rounds run on 32-bit words held in the low halves of 64-bit lanes: each
// multiply is then one vpmuludq/pmuludq (its operands' high halves are zero)
// giving both the high and the low word, with no narrowing and widening per
// round; the words are narrowed to i32 once, after the last round.
struct Philox {
  LoweringContext& cx;
  int width;

  llvm::Type* wide() { return cx.b().getInt64Ty(); }
  llvm::Type* wide_vec() { return width == 1 ? wide() : llvm::FixedVectorType::get(wide(), static_cast<unsigned>(width)); }
  llvm::Value* u64(uint64_t v) { return llvm::ConstantInt::get(wide_vec(), v); }

  // The 64-bit product of a constant and a word, as (hi, lo) words.
  std::pair<llvm::Value*, llvm::Value*> mul_wide(uint32_t m, llvm::Value* x) {
    auto& b = cx.b();
    llvm::Value* p = b.CreateMul(x, u64(m), "", /*HasNUW=*/true);
    return {b.CreateLShr(p, u64(32)), b.CreateAnd(p, u64(0xffffffffu))};
  }

  // philox::philox4x32_10 on lanes of counters (words, zero-extended) with a
  // constant key; returns the four i32 words.
  Words words(Words c, philox::Key key) {
    auto& b = cx.b();
    for (int r = 0; r < philox::kRounds; ++r) {
      if (r > 0) key = {key[0] + philox::kWeyl0, key[1] + philox::kWeyl1};
      const auto [hi0, lo0] = mul_wide(philox::kMul0, c[0]);
      const auto [hi1, lo1] = mul_wide(philox::kMul1, c[2]);
      c = {b.CreateXor(b.CreateXor(hi1, c[1]), u64(key[0])), lo1, b.CreateXor(b.CreateXor(hi0, c[3]), u64(key[1])),
           lo0};
    }
    for (llvm::Value*& w : c) w = b.CreateTrunc(w, cx.reg_type(DType::i32, width));
    return c;
  }
};

// The <width x i32> draws of elements first .. first+width-1 (first: i64), or
// the i32 draw of element `first` when width is 1 (philox::dropout_words).
llvm::Value* draws(LoweringContext& cx, llvm::Value* first, int width, llvm::Value* step, philox::Key key) {
  auto& b = cx.b();
  llvm::Type* i64 = first->getType();
  const int calls = width == 1 ? 1 : (width + 6) / 4;  // 4 * calls >= 3 + width: any start % 4
  // Counters q0, q0+1, ...: q = i / 4, as (q lo, step, q hi, 0).
  llvm::Value* q = cx.splat(b.CreateLShr(first, llvm::ConstantInt::get(i64, 2)), calls);
  if (calls > 1) {
    std::vector<llvm::Constant*> offsets;
    for (int j = 0; j < calls; ++j) offsets.push_back(b.getInt64(static_cast<uint64_t>(j)));
    q = b.CreateAdd(q, llvm::ConstantVector::get(offsets), "", true, true);
  }
  Philox philox{cx, calls};
  llvm::Value* step_word = cx.splat(b.CreateZExt(step, b.getInt64Ty()), calls);
  const Words w = philox.words({b.CreateAnd(q, philox.u64(0xffffffffu)), step_word,
                                b.CreateLShr(q, philox.u64(32)), philox.u64(0)},
                               key);
  llvm::Value* skip = b.CreateTrunc(b.CreateAnd(first, llvm::ConstantInt::get(i64, 3)), b.getInt32Ty());  // first % 4
  if (calls == 1)  // word first % 4
    return b.CreateSelect(
        b.CreateICmpEQ(skip, b.getInt32(0)), w[0],
        b.CreateSelect(b.CreateICmpEQ(skip, b.getInt32(1)), w[1],
                       b.CreateSelect(b.CreateICmpEQ(skip, b.getInt32(2)), w[2], w[3])));
  // All draws in element order, table[4j + k] = word k of call j, then the
  // width of them from first % 4 on: one constant shuffle per possible start.
  std::vector<int> pairs, interleave;
  for (int j = 0; j < calls; ++j)
    for (int k = 0; k < 2; ++k) pairs.push_back(k * calls + j);  // (a_j, b_j) of two vectors a, b
  for (int j = 0; j < calls; ++j)
    for (int k : {0, 1, 2 * calls, 2 * calls + 1}) interleave.push_back(2 * j + k);
  llvm::Value* table = b.CreateShuffleVector(b.CreateShuffleVector(w[0], w[1], pairs),
                                             b.CreateShuffleVector(w[2], w[3], pairs), interleave);
  llvm::Value* picked = nullptr;
  for (int start = 3; start >= 0; --start) {
    std::vector<int> window;
    for (int l = 0; l < width; ++l) window.push_back(start + l);
    llvm::Value* at = b.CreateShuffleVector(table, window);
    picked = picked ? b.CreateSelect(b.CreateICmpEQ(skip, b.getInt32(static_cast<uint32_t>(start))), at, picked) : at;
  }
  return picked;
}

llvm::Value* dropout(const ElementalArgs& a, const ElementIndex& index) {
  LoweringContext& cx = a.cx;
  auto& b = cx.b();
  const int w = index.width;
  const double rate = a.node.attrs().get_float("rate");
  llvm::Value* x = a.operands[0](index);
  llvm::Value* step_scalar = a.operands[1](ElementIndex{});
  // The flat row-major index of the first lane, in the whole batch when x is a part of it.
  llvm::Value* first = flat_offset(cx, index.dims, a.node.out().shape);
  if (a.operands.size() > 2) {
    llvm::Type* i64 = first->getType();
    llvm::Value* example = b.CreateSExt(a.operands[2](ElementIndex{}), i64, "first_example");
    const int64_t per_example = ops::dropout_elements_per_example(a.node.out(), a.node.attrs());
    first = b.CreateAdd(first, b.CreateMul(example, llvm::ConstantInt::get(i64, static_cast<uint64_t>(per_example))));
  }
  const philox::Key key = philox::dropout_key(a.node.attrs().get_int("seed"));
  // Broadcast lanes are one element: draw it once.
  llvm::Value* word = w > 1 && index.lane_axis < 0 ? cx.splat(draws(cx, first, 1, step_scalar, key), w)
                                                   : draws(cx, first, w, step_scalar, key);
  llvm::Type* wide = cx.b().getInt64Ty();
  if (w > 1) wide = llvm::FixedVectorType::get(wide, static_cast<unsigned>(w));
  llvm::Value* u = b.CreateZExt(word, wide);
  const uint64_t threshold = philox::dropout_threshold(rate);
  llvm::Value* keep = b.CreateICmpUGE(u, llvm::ConstantInt::get(wide, threshold));
  llvm::Value* scaled = b.CreateFMul(x, cx.f32c(philox::dropout_scale(rate), w));
  return b.CreateSelect(keep, scaled, cx.f32c(0.0f, w));
}

}  // namespace

void register_dropout_emitters(EmitterRegistry& r) { r.add_elemental("dropout", dropout); }

}  // namespace kiln::compiler
