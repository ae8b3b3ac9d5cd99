#include "tools/cmd_import.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/ir/error.h"

namespace kiln::cli {

void exec_import(const std::vector<std::string>& args) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("import: cannot find the kiln binary's directory: " + ec.message());
  const std::string helper = (self.parent_path() / "kiln-import").string();
  std::vector<char*> argv = {const_cast<char*>(helper.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(helper.c_str(), argv.data());
  throw Error("import: cannot run " + helper + ": " + std::strerror(errno));
}

}  // namespace kiln::cli
