#pragma once
// The memory limit of this process's control group: cgroup v2's memory.max or
// v1's memory.limit_in_bytes, of its own group or of any group above it (a
// container's limit is often set on a parent).
#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

struct CgroupMemoryLimit {
  uint64_t bytes = 0;
  std::string file;  // where it was read, e.g. /sys/fs/cgroup/user.slice/memory.max
};

// The smallest limit set for the groups that /proc/self/cgroup's text
// `proc_self_cgroup` names, read under `root` (normally /sys/fs/cgroup); none
// if no group has one ("max" is none).
std::optional<CgroupMemoryLimit> cgroup_memory_limit(const std::string& proc_self_cgroup, const std::string& root);

// The same for this process (read once).
const std::optional<CgroupMemoryLimit>& cgroup_memory_limit();

}  // namespace kiln
