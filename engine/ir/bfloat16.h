#pragma once
// bfloat16, the storage of DType::bf16: the upper half of an f32's bits (its
// sign, its 8 exponent bits, 7 of its 23 mantissa bits), so the same range as
// f32 with about 3 significant decimal digits. Widening to f32 is exact;
// narrowing rounds to nearest, ties to even, as vcvtneps2bf16 does; a NaN stays
// a (quiet) NaN. Arithmetic happens in f32: kiln stores bf16, it never adds it.
#include <bit>
#include <cstdint>

namespace kiln {

struct bfloat16 {
  uint16_t bits = 0;

  bfloat16() = default;
  explicit bfloat16(float f) : bits(round_bits(std::bit_cast<uint32_t>(f))) {}
  explicit operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }
  explicit operator double() const { return static_cast<float>(*this); }
  friend bool operator==(bfloat16 a, bfloat16 b) { return a.bits == b.bits; }

  // The nearest bf16 of an f32's bits (ties to even); NaN: quiet, sign kept.
  static constexpr uint16_t round_bits(uint32_t u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
};

// f rounded to the nearest bf16, as an f32.
inline float round_to_bf16(float f) { return static_cast<float>(bfloat16(f)); }

}  // namespace kiln
