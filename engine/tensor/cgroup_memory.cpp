#include "engine/tensor/cgroup_memory.h"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace kiln {
namespace {

// The limit in `file`: a byte count; "max", a missing file or anything else is none.
std::optional<uint64_t> read_limit(const std::string& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text)) return std::nullopt;
  uint64_t bytes = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size()) return std::nullopt;
  return bytes;
}

// "/a/b" -> "/a/b", "/a", "" (the mount's root).
std::vector<std::string> self_and_ancestors(std::string path) {
  std::vector<std::string> out;
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    out.push_back(path);
    if (path.empty()) return out;
    path.resize(path.rfind('/'));
  }
}

bool has_memory_controller(std::string_view controllers) {
  for (size_t at = 0; at <= controllers.size();) {
    const size_t comma = std::min(controllers.find(',', at), controllers.size());
    if (controllers.substr(at, comma - at) == "memory") return true;
    at = comma + 1;
  }
  return false;
}

}  // namespace

std::optional<CgroupMemoryLimit> cgroup_memory_limit(const std::string& proc_self_cgroup, const std::string& root) {
  // Each line is ID:CONTROLLERS:PATH; v2's has ID 0 and no controllers. In a
  // container the path may not exist under root (its own groups are the root's).
  std::vector<std::string> files;
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string_view controllers = std::string_view(line).substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    for (const std::string& group : self_and_ancestors(path)) {
      if (controllers.empty()) {
        files.push_back(root + group + "/memory.max");
        files.push_back(root + "/unified" + group + "/memory.max");  // the hybrid layout
      } else if (has_memory_controller(controllers)) {
        files.push_back(root + "/memory" + group + "/memory.limit_in_bytes");
      }
    }
  }
  std::optional<CgroupMemoryLimit> smallest;
  for (const std::string& file : files)
    if (const auto bytes = read_limit(file); bytes && (!smallest || *bytes < smallest->bytes))
      smallest = CgroupMemoryLimit{*bytes, file};
  return smallest;
}

const std::optional<CgroupMemoryLimit>& cgroup_memory_limit() {
  static const std::optional<CgroupMemoryLimit> limit = [] {
    std::ifstream in("/proc/self/cgroup");
    std::ostringstream text;
    text << in.rdbuf();
    return cgroup_memory_limit(text.str(), "/sys/fs/cgroup");
  }();
  return limit;
}

}  // namespace kiln
