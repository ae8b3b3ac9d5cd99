#include "models/eval/utf8.h"

#include <cstdint>

namespace kiln::models {

std::string_view without_bom(std::string_view text) {
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  return text.starts_with(kBom) ? text.substr(kBom.size()) : text;
}
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

}  // namespace kiln::models
