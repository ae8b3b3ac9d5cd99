// dropout as an elemental generator: the Philox4x32-10 mask of
// engine/tensor/philox.h computed in IR, lane by lane in vectors, so the JIT draws
// bit for bit the mask the interpreter draws. The round keys depend only on the
// seed attribute and are folded to constants.
#include <array>

#include "compiler/codegen/families.h"
#include "engine/tensor/philox.h"

namespace kiln::compiler {

namespace {

using Words = std::array<llvm::Value*, 4>;

struct Philox {
  LoweringContext& cx;
  int width;

  llvm::Value* u32(uint32_t v) { return cx.i32c(static_cast<int32_t>(v), width); }
  llvm::Type* wide() { return cx.b().getInt64Ty(); }
  llvm::Type* wide_vec() { return width == 1 ? wide() : llvm::FixedVectorType::get(wide(), static_cast<unsigned>(width)); }

  // The 64-bit product of a constant and a 32-bit value, as (hi, lo) halves.
  std::pair<llvm::Value*, llvm::Value*> mul_wide(uint32_t m, llvm::Value* x) {
    auto& b = cx.b();
    llvm::Value* p = b.CreateMul(b.CreateZExt(x, wide_vec()), llvm::ConstantInt::get(wide_vec(), m));
    llvm::Type* narrow = x->getType();
    return {b.CreateTrunc(b.CreateLShr(p, llvm::ConstantInt::get(wide_vec(), 32)), narrow), b.CreateTrunc(p, narrow)};
  }

  // philox::philox4x32_10 on lanes of counters with a constant key; returns word 0.
  llvm::Value* first_word(Words c, philox::Key key) {
    auto& b = cx.b();
    for (int r = 0; r < philox::kRounds; ++r) {
      if (r > 0) key = {key[0] + philox::kWeyl0, key[1] + philox::kWeyl1};
      const auto [hi0, lo0] = mul_wide(philox::kMul0, c[0]);
      const auto [hi1, lo1] = mul_wide(philox::kMul1, c[2]);
      c = {b.CreateXor(b.CreateXor(hi1, c[1]), u32(key[0])), lo1, b.CreateXor(b.CreateXor(hi0, c[3]), u32(key[1])), lo0};
    }
    return c[0];
  }
};

llvm::Value* dropout(const ElementalArgs& a, const ElementIndex& index) {
  LoweringContext& cx = a.cx;
  auto& b = cx.b();
  const int w = index.width;
  const double rate = a.node.attrs().get_float("rate");
  llvm::Value* x = a.operands[0](index);
  llvm::Value* step = cx.splat(a.operands[1](ElementIndex{}), w);
  // The flat row-major index of each lane.
  llvm::Value* flat = cx.splat(flat_offset(cx, index.dims, a.node.out().shape), w);
  if (w > 1 && index.lane_axis >= 0) {
    std::vector<llvm::Constant*> lanes;
    for (int lane = 0; lane < w; ++lane) lanes.push_back(b.getInt64(static_cast<uint64_t>(lane)));
    flat = b.CreateAdd(flat, llvm::ConstantVector::get(lanes), "", true, true);
  }
  llvm::Type* u32 = cx.reg_type(DType::i32, w);
  llvm::Value* lo = b.CreateTrunc(flat, u32);
  llvm::Value* hi = b.CreateTrunc(b.CreateLShr(flat, llvm::ConstantInt::get(flat->getType(), 32)), u32);
  Philox philox{cx, w};
  llvm::Value* word = philox.first_word({lo, step, hi, cx.i32c(0, w)}, philox::dropout_key(a.node.attrs().get_int("seed")));
  llvm::Value* u = b.CreateZExt(word, flat->getType());
  const uint64_t threshold = philox::dropout_threshold(rate);
  llvm::Value* keep = b.CreateICmpUGE(u, llvm::ConstantInt::get(flat->getType(), threshold));
  llvm::Value* scaled = b.CreateFMul(x, cx.f32c(philox::dropout_scale(rate), w));
  return b.CreateSelect(keep, scaled, cx.f32c(0.0f, w));
}

}  // namespace

void register_dropout_emitters(EmitterRegistry& r) { r.add_pointwise("dropout", dropout); }

}  // namespace kiln::compiler
