#include "engine/tensor/memory_check.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "engine/ir/error.h"
#include "engine/tensor/cgroup_memory.h"

namespace kiln {
namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / double(uint64_t{1} << 30));
  return text;
}

uint64_t machine_memory_bytes() {
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    // Unknown: no limit here; the allocator still has the last word.
    if (pages <= 0 || page_size <= 0) return UINT64_MAX;
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size);
  }();
  return bytes;
}

// A limit set on the process (setrlimit) and the /proc/self/statm field that
// counts what it limits, in pages.
struct ProcessLimit {
  int resource;
  const char* name;
  const char* ulimit_flag;
  int statm_field;
};
constexpr ProcessLimit kProcessLimits[] = {
    {RLIMIT_AS, "address-space", "ulimit -v", 0},  // statm: size
    {RLIMIT_DATA, "data", "ulimit -d", 5},         // statm: data + stack
};

uint64_t statm_bytes(int field) {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages[7] = {};
  const int read = std::fscanf(f, "%llu %llu %llu %llu %llu %llu %llu", &pages[0], &pages[1], &pages[2], &pages[3],
                               &pages[4], &pages[5], &pages[6]);
  std::fclose(f);
  if (read <= field) return 0;
  return pages[field] * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

MemoryLimit memory_limit() {
  MemoryLimit smallest{machine_memory_bytes(), "this machine's " + gib(machine_memory_bytes()) + " of memory"};
  if (const auto& cgroup = cgroup_memory_limit(); cgroup && cgroup->bytes < smallest.bytes)
    smallest = {cgroup->bytes, "the control group's memory limit of " + gib(cgroup->bytes) + " (" + cgroup->file + ")"};
  // Process limits change at run time (setrlimit, ulimit in a child), so they are read every time.
  for (const ProcessLimit& limit : kProcessLimits) {
    rlimit r{};
    if (getrlimit(limit.resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY) continue;
    const uint64_t used = statm_bytes(limit.statm_field), left = r.rlim_cur > used ? r.rlim_cur - used : 0;
    if (left >= smallest.bytes) continue;
    smallest = {left, "the " + gib(left) + " left under the " + limit.name + " limit of " + gib(r.rlim_cur) + " (" +
                          limit.ulimit_flag + " " + std::to_string(r.rlim_cur / 1024) + ")"};
  }
  return smallest;
}

uint64_t checked_bytes(uint64_t count, uint64_t item_size, std::string_view what) {
  uint64_t bytes = 0;
  std::string msg(what);
  if (__builtin_mul_overflow(count, item_size, &bytes)) throw Error(msg + " needs more than 2^64 bytes");
  // A page cannot be what breaks a limit; not looking the limits up keeps the
  // interpreter's many small tensors cheap.
  if (bytes <= 4096) return bytes;
  const MemoryLimit limit = memory_limit();
  if (bytes > limit.bytes) {
    msg += " needs " + std::to_string(bytes);
    msg += " bytes (" + gib(bytes);
    msg += "), more than " + limit.what;
    throw Error(msg);
  }
  return bytes;
}

uint64_t checked_bytes(const TensorType& type) {
  return checked_bytes(static_cast<uint64_t>(type.numel()), dtype_size(type.dtype), type_str(type));
}

std::string out_of_memory_message() {
  return "out of memory: an allocation failed; the memory limit is " + memory_limit().what;
}

}  // namespace kiln
