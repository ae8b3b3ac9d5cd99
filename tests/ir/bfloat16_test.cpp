// bfloat16 (engine/ir/bfloat16.h), the storage of DType::bf16: narrowing rounds
// to nearest with ties to even and keeps NaN a NaN; widening is exact; the dtype
// prints and parses.
#include "engine/ir/bfloat16.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "engine/ir/dtype.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"

using namespace kiln;

namespace {
uint16_t bits(float f) { return bfloat16(f).bits; }
}  // namespace

TEST_CASE("bf16 keeps the upper half of an f32, rounded to nearest even") {
  CHECK(bits(1.0f) == 0x3f80);
  CHECK(bits(-2.0f) == 0xc000);
  CHECK(bits(0.0f) == 0x0000);
  CHECK(bits(-0.0f) == 0x8000);
  CHECK(bits(1.00390625f) == 0x3f80);  // halfway between 1 and 1 + 2^-7: to the even one, 1
  CHECK(bits(1.01171875f) == 0x3f82);  // halfway between 1 + 2^-7 and 1 + 2^-6: to the even one, up
  CHECK(bits(std::nextafter(1.00390625f, 2.0f)) == 0x3f81);  // just past halfway: up
  CHECK(bits(3.38953139e38f) == 0x7f7f);                     // the largest bf16
  CHECK(bits(3.3961e38f) == 0x7f7f);                         // below halfway to the next power of two: to the largest
  CHECK(bits(3.3963e38f) == 0x7f80);                         // past halfway: to inf
  CHECK(bits(std::numeric_limits<float>::infinity()) == 0x7f80);
  CHECK(bits(1e-40f) == 0x0001);  // subnormals round too (1e-40 is about 1.1 steps of 2^-133)
}

TEST_CASE("bf16 NaN stays a quiet NaN, sign kept; widening is exact") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(static_cast<float>(bfloat16(nan))));
  CHECK(std::isnan(static_cast<float>(bfloat16(-nan))));
  CHECK(std::signbit(static_cast<float>(bfloat16(-nan))));
  // A signalling NaN whose payload sits in the low half only: still a NaN, not inf.
  CHECK(std::isnan(static_cast<float>(bfloat16(std::bit_cast<float>(0x7f800001u)))));
  for (uint32_t b : {0x0000u, 0x3f81u, 0xc2f7u, 0x7f7fu, 0x0001u})
    CHECK(bfloat16(static_cast<float>(bfloat16(std::bit_cast<float>(b << 16)))).bits == b);
  CHECK(round_to_bf16(3.14159265f) == 3.140625f);
}

TEST_CASE("the bf16 dtype prints, parses and takes two bytes") {
  CHECK(dtype_name(DType::bf16) == "bf16");
  CHECK(parse_dtype("bf16") == DType::bf16);
  CHECK(dtype_size(DType::bf16) == 2);
  const std::string text =
      "graph @g {\n"
      "  input %x : bf16[2,3]\n"
      "  input %w : bf16[3,4]\n"
      "  %y = matmul(%x, %w) : f32[2,4]\n"
      "  %z = cast(%y) {dtype=bf16} : bf16[2,4]\n"
      "  output %z\n"
      "}\n";
  CHECK(print_kir(parse_kir(text, "g.kir")) == text);
}
