#include "compiler/target/host.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/TargetParser/Host.h>

namespace kiln::compiler {

HostInfo host_info() {
  return {LLVM_VERSION_STRING, llvm::sys::getHostCPUName().str(), llvm::sys::getProcessTriple()};
}

}  // namespace kiln::compiler
