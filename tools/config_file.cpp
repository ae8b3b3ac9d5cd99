#include "tools/config_file.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <sstream>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"

namespace kiln::cli {
namespace {

bool given(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(),
                     [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
}

}  // namespace

std::vector<std::string> expand_config_file(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  std::string path;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config-file" && i + 1 < args.size()) {
      path = args[++i];
    } else if (args[i].rfind("--config-file=", 0) == 0) {
      path = args[i].substr(std::string("--config-file=").size());
    } else {
      out.push_back(args[i]);
    }
  }
  if (path.empty()) return out;
  std::vector<CLI::ConfigItem> items;
  try {
    std::istringstream in(read_file(path, kMiB, "a config file"));
    items = CLI::ConfigTOML().from_config(in);
  } catch (const std::exception& e) {  // unreadable (kiln::Error) or not TOML/INI (CLI::Error)
    throw Error("--config-file " + path + ": " + e.what());
  }
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // CLI11's section markers
    if (!item.parents.empty())
      throw Error("--config-file " + path + ": key '" + item.fullname() + "' is in a section; flags are top-level keys");
    const std::string flag = "--" + item.name;
    if (given(out, flag)) continue;
    if (item.inputs.size() == 1 && (item.inputs[0] == "true" || item.inputs[0] == "false")) {
      if (item.inputs[0] == "true") out.push_back(flag);
      continue;
    }
    out.push_back(flag);
    out.insert(out.end(), item.inputs.begin(), item.inputs.end());
  }
  return out;
}

}  // namespace kiln::cli
