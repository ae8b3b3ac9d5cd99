#pragma once
// Sizes taken from outside (a file's header, a declared shape, a model config)
// are checked here before anything of that size is allocated, so a huge or
// corrupt size is refused with its value, its bytes and the limit it exceeds
// instead of ending in a bare std::bad_alloc, or first eating the machine's memory.
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/ir/shape.h"

namespace kiln {

// The most this process can allocate now, by the smallest of the limits on it:
// the machine's physical memory, a control group's memory limit
// (cgroup_memory.h), and what the address-space and data limits (ulimit -v,
// ulimit -d) leave beside what the process has mapped already.
struct MemoryLimit {
  uint64_t bytes = 0;
  // Which limit it is, e.g. "this machine's 15.5 GiB of memory" or "the 2.9 GiB
  // left under the address-space limit of 3.8 GiB (ulimit -v 4000000)".
  std::string what;
};
MemoryLimit memory_limit();

// The bytes of `count` items of `item_size` bytes. Throws kiln::Error
// "WHAT needs B bytes (G GiB), more than <memory_limit().what>" if they exceed
// memory_limit(), or "WHAT needs more than 2^64 bytes".
uint64_t checked_bytes(uint64_t count, uint64_t item_size, std::string_view what);

// The same for a tensor type (WHAT is its type, e.g. "f32[100000,100000]"); a
// shape whose element count overflows is refused too.
uint64_t checked_bytes(const TensorType& type);

// What the kiln command says when an allocation fails all the same (the checks
// above cover the sizes that come from outside, not a kernel's temporaries):
// "out of memory: an allocation failed; the memory limit is <memory_limit().what>".
std::string out_of_memory_message();

}  // namespace kiln
