#pragma once
// Philox4x32-10, the counter-based RNG of Salmon et al., "Parallel Random Numbers:
// As Easy as 1, 2, 3" (SC'11), bit-identical to Random123's philox4x32_R(10, ...).
// Plain integer arithmetic only, so the JIT can emit the same operations and draw
// the same numbers as the interpreter.
//
// Dropout's mask (used by ops/dropout.cpp; the JIT must reproduce it bit for bit):
//   key      = (seed & 0xffffffff, seed >> 32)           seed: the op's int attribute
//   q        = i / 4                                      i: flat row-major element index
//   counter  = (q & 0xffffffff, step, q >> 32, 0)         step: the i32 key operand as u32
//   u        = philox4x32_10(counter, key)[i % 4]         one Philox call draws 4 elements' words
//   keep(i)  = u >= threshold, threshold = ceil(rate * 2^32) (a 64-bit integer; rate 0 keeps all)
//   y[i]     = keep(i) ? x[i] * float(1.0 / (1.0 - rate)) : 0
#include <array>
#include <cmath>
#include <cstdint>

namespace kiln::philox {

using Counter = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

inline constexpr uint32_t kMul0 = 0xD2511F53u;
inline constexpr uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1
inline constexpr int kRounds = 10;

constexpr Counter one_round(const Counter& c, const Key& k) {
  const uint64_t p0 = uint64_t{kMul0} * c[0];
  const uint64_t p1 = uint64_t{kMul1} * c[2];
  const auto hi = [](uint64_t p) { return static_cast<uint32_t>(p >> 32); };
  const auto lo = [](uint64_t p) { return static_cast<uint32_t>(p); };
  return {hi(p1) ^ c[1] ^ k[0], lo(p1), hi(p0) ^ c[3] ^ k[1], lo(p0)};
}

// Ten rounds; the key is bumped by the Weyl constants between rounds.
constexpr Counter philox4x32_10(Counter c, Key k) {
  for (int r = 0; r < kRounds; ++r) {
    if (r > 0) k = {k[0] + kWeyl0, k[1] + kWeyl1};
    c = one_round(c, k);
  }
  return c;
}

// ---- the dropout scheme documented above ----

constexpr Key dropout_key(int64_t seed) {
  const auto s = static_cast<uint64_t>(seed);
  return {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)};
}

// ceil(rate * 2^32) for 0 <= rate < 1; the product is exact in double (a power-of-two scale).
inline uint64_t dropout_threshold(double rate) { return static_cast<uint64_t>(std::ceil(rate * 4294967296.0)); }

// The four 32-bit draws of elements 4q .. 4q+3.
constexpr Counter dropout_words(const Key& key, int32_t step, uint64_t q) {
  return philox4x32_10({static_cast<uint32_t>(q), static_cast<uint32_t>(step), static_cast<uint32_t>(q >> 32), 0}, key);
}

constexpr bool dropout_keep(const Key& key, int32_t step, uint64_t index, uint64_t threshold) {
  return dropout_words(key, step, index / 4)[index % 4] >= threshold;
}

inline float dropout_scale(double rate) { return static_cast<float>(1.0 / (1.0 - rate)); }

}  // namespace kiln::philox
