#include <doctest/doctest.h>

#include "engine/tensor/philox.h"

using namespace kiln::philox;

// Known-answer vectors of Random123 (kat_vectors, philox4x32 with 10 rounds).
TEST_CASE("philox4x32_10 matches the Random123 known answers") {
  CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == Counter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        Counter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        Counter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("philox4x32_10 is usable at compile time") {
  static_assert(philox4x32_10({0, 0, 0, 0}, {0, 0})[0] == 0x6627e8d5u);
  CHECK(true);
}

TEST_CASE("dropout key splits the 64-bit seed into two words") {
  CHECK(dropout_key(5) == Key{5, 0});
  CHECK(dropout_key(0x123456789) == Key{0x23456789, 0x1});
  CHECK(dropout_key(-1) == Key{0xffffffff, 0xffffffff});
}

TEST_CASE("dropout threshold is the ceiling of rate times 2^32") {
  CHECK(dropout_threshold(0.0) == 0);
  CHECK(dropout_threshold(0.5) == 0x80000000u);
  CHECK(dropout_threshold(0.25) == 0x40000000u);
  // 0.1 * 2^32 = 429496729.6 (as the double 0.1 gives it), so the threshold rounds up.
  CHECK(dropout_threshold(0.1) == 429496730u);
}

TEST_CASE("dropout_keep draws element i from word i % 4 of the counter of i / 4 and the step") {
  // Counter 0 key 0 gives 0x6627e8d5, 0xe169c58d, ... (see the known answers above):
  // elements 0 and 1.
  CHECK(dropout_keep({0, 0}, 0, 0, 0x6627e8d5u));
  CHECK_FALSE(dropout_keep({0, 0}, 0, 0, 0x6627e8d6u));
  CHECK(dropout_keep({0, 0}, 0, 1, 0xe169c58du));
  CHECK_FALSE(dropout_keep({0, 0}, 0, 1, 0xe169c58eu));
  // The third known answer, seen through the dropout scheme: element 4q + 2.
  const Key k = {0xa4093822, 0x299f31d0};
  const uint64_t q = (uint64_t{0x13198a2e} << 32) | 0x243f6a88;
  // Counter word 3 must be 0 in the scheme, so compare against a direct draw.
  const uint32_t u = philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0}, k)[2];
  CHECK(dropout_keep(k, static_cast<int32_t>(0x85a308d3u), 4 * q + 2, u));
  CHECK_FALSE(dropout_keep(k, static_cast<int32_t>(0x85a308d3u), 4 * q + 2, uint64_t{u} + 1));
  CHECK(dropout_scale(0.5) == 2.0f);
  CHECK(dropout_scale(0.0) == 1.0f);
}
