#include "models/eval/utf8.h"

#include <cstdint>

namespace kiln::models {
namespace {

uint32_t code_point(std::string_view c) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(c[i])); };
  switch (c.size()) {
    case 2:
      return (b(0) & 0x1f) << 6 | (b(1) & 0x3f);
    case 3:
      return (b(0) & 0x0f) << 12 | (b(1) & 0x3f) << 6 | (b(2) & 0x3f);
    case 4:
      return (b(0) & 0x07) << 18 | (b(1) & 0x3f) << 12 | (b(2) & 0x3f) << 6 | (b(3) & 0x3f);
    default:
      return b(0);
  }
}

// The length of the well-formed sequence (Unicode's table 3-7) starting at s[i], or 0.
size_t valid_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  // The allowed range of the second byte narrows for E0 (no overlongs), ED (no
  // surrogates), F0 (no overlongs) and F4 (nothing above U+10FFFF).
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;
  if (lead >= 0xc2 && lead <= 0xdf) {
    len = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    len = 3;
    if (lead == 0xe0) lo = 0xa0;
    if (lead == 0xed) hi = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    len = 4;
    if (lead == 0xf0) lo = 0x90;
    if (lead == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > s.size() || byte(1) < lo || byte(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((byte(k) & 0xc0) != 0x80) return 0;
  return len;
}

}  // namespace

std::vector<std::string_view> characters(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    const auto lead = static_cast<unsigned char>(s[i]);
    size_t len = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 1;
    if (i + len > s.size()) len = 1;
    for (size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) len = 1;
    out.push_back(s.substr(i, len));
    i += len;
  }
  return out;
}

bool is_space(std::string_view c) {
  if (c.size() == 1 && static_cast<unsigned char>(c[0]) >= 0x80) return false;  // a stray byte, not U+0085 or U+00A0
  const uint32_t u = code_point(c);
  return (u >= 0x09 && u <= 0x0d) || (u >= 0x1c && u <= 0x20) || u == 0x85 || u == 0xa0 || u == 0x1680 ||
         (u >= 0x2000 && u <= 0x200a) || u == 0x2028 || u == 0x2029 || u == 0x202f || u == 0x205f || u == 0x3000;
}

std::optional<size_t> malformed_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = valid_sequence_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return std::nullopt;
}

}  // namespace kiln::models
