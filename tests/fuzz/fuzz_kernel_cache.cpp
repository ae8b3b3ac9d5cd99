// Kernel cache entries: an entry decodes to its object only if it is whole and
// holds the key asked for, and then it is exactly what encoding gives.
//
// The first byte steers: if its low bit is set, the entry's last 8 bytes are
// replaced by the right checksum first, so mutations reach past the checksum.
#include "compiler/jit/kernel_cache_entry.h"
#include "engine/fnv1a.h"
#include "fuzz/fuzz_targets.h"

namespace kiln::fuzz {

Outcome fuzz_kernel_cache(std::string_view bytes) {
  constexpr std::string_view kKey = "fuzz kernel key";
  if (bytes.empty()) return Outcome::rejected;
  std::string entry(bytes.substr(1));
  if ((bytes[0] & 1) && entry.size() >= 8) {
    const uint64_t sum = fnv1a_64(std::string_view(entry).substr(0, entry.size() - 8));
    for (size_t i = 0; i < 8; ++i) entry[entry.size() - 8 + i] = static_cast<char>((sum >> (8 * i)) & 0xff);
  }
  const auto object = compiler::decode_cache_entry(entry, kKey);
  if (!object) return Outcome::rejected;
  if (compiler::encode_cache_entry(kKey, *object) != entry)
    throw FuzzFailure("a decoded entry is not what encoding its object gives");
  return Outcome::accepted;
}

}  // namespace kiln::fuzz
