#pragma once
// Sizes taken from outside (a file's header, a declared shape, a model config)
// are checked here before anything of that size is allocated, so a huge or
// corrupt size is refused with its value and its bytes instead of ending in a
// bare std::bad_alloc, or first eating the machine's memory.
#include <cstdint>
#include <string_view>

#include "engine/ir/shape.h"

namespace kiln {

// The physical memory of this machine in bytes (read once).
uint64_t machine_memory_bytes();

// The bytes of `count` items of `item_size` bytes. Throws kiln::Error
// "WHAT needs B bytes (G GiB), more than this machine's M GiB of memory" if
// they exceed machine_memory_bytes(), or "WHAT needs more than 2^64 bytes".
uint64_t checked_bytes(uint64_t count, uint64_t item_size, std::string_view what);

// The same for a tensor type (WHAT is its type, e.g. "f32[100000,100000]"); a
// shape whose element count overflows is refused too.
uint64_t checked_bytes(const TensorType& type);

}  // namespace kiln
