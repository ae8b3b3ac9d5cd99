#include <iostream>

#include "compiler/host.h"

int main() {
  const auto h = kiln::compiler::host_info();
  std::cout << "kiln " << KILN_VERSION << " (LLVM " << h.llvm_version << ", host CPU " << h.cpu_name << ")\n";
}
