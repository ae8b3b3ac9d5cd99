#include "engine/tensor/memory_check.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "engine/ir/error.h"

namespace kiln {
namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / double(uint64_t{1} << 30));
  return text;
}

}  // namespace

uint64_t machine_memory_bytes() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    // Unknown: no limit here; the allocator still has the last word.
    if (pages <= 0 || page_size <= 0) return UINT64_MAX;
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }();
  return bytes;
}

uint64_t checked_bytes(uint64_t count, uint64_t item_size, std::string_view what) {
  uint64_t bytes = 0;
  std::string msg(what);
  if (__builtin_mul_overflow(count, item_size, &bytes)) throw Error(msg + " needs more than 2^64 bytes");
  if (bytes > machine_memory_bytes()) {
    msg += " needs " + std::to_string(bytes);
    msg += " bytes (" + gib(bytes);
    msg += "), more than this machine's " + gib(machine_memory_bytes());
    msg += " of memory";
    throw Error(msg);
  }
  return bytes;
}

uint64_t checked_bytes(const TensorType& type) {
  return checked_bytes(static_cast<uint64_t>(type.numel()), dtype_size(type.dtype), type_str(type));
}

}  // namespace kiln
