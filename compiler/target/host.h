#pragma once
#include <string>

namespace kiln::compiler {

// What LLVM knows about this machine: its version, the host CPU name
// (e.g. "znver3", "skylake-avx512") and the target triple.
struct HostInfo {
  std::string llvm_version;
  std::string cpu_name;
  std::string target_triple;
};
HostInfo host_info();

}  // namespace kiln::compiler
