#pragma once
// FNV-1a, 64-bit: a stable hash of a name or text, the same on every platform.
// Keys param initialization (engine/param_init) and the de-en split (models/tasks).
#include <cstdint>
#include <string_view>

namespace kiln {

inline uint64_t fnv1a_64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325u;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3u;
  }
  return h;
}

}  // namespace kiln
