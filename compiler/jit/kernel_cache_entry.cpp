#include "compiler/jit/kernel_cache_entry.h"

#include <cstdint>

#include "engine/fnv1a.h"

namespace kiln::compiler {
namespace {

constexpr std::string_view kMagic = "kiln-kernel-cache 1\n";

void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

bool read_u64(std::string_view& in, uint64_t& v) {
  if (in.size() < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  in.remove_prefix(8);
  return true;
}

}  // namespace

std::string encode_cache_entry(std::string_view key, std::string_view object) {
  std::string out(kMagic);
  append_u64(out, key.size());
  out += key;
  append_u64(out, object.size());
  out += object;
  append_u64(out, fnv1a_64(out));
  return out;
}

std::optional<std::string> decode_cache_entry(std::string_view entry, std::string_view key) {
  if (entry.size() < kMagic.size() + 24 || entry.substr(0, kMagic.size()) != kMagic) return std::nullopt;
  uint64_t checksum = 0;
  std::string_view tail = entry.substr(entry.size() - 8);
  if (!read_u64(tail, checksum) || checksum != fnv1a_64(entry.substr(0, entry.size() - 8))) return std::nullopt;
  std::string_view in = entry.substr(kMagic.size(), entry.size() - 8 - kMagic.size());
  uint64_t key_size = 0, object_size = 0;
  if (!read_u64(in, key_size) || key_size > in.size() || in.substr(0, key_size) != key) return std::nullopt;
  in.remove_prefix(key_size);
  if (!read_u64(in, object_size) || object_size != in.size()) return std::nullopt;
  return std::string(in);
}

}  // namespace kiln::compiler
