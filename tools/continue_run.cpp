#include "tools/continue_run.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/checkpoint.h"
#include "models/train/resume_settings.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

// The value `args` gives `flag` ("--flag V" or "--flag=V"; a flag without a
// value gives ""), or nothing.
std::optional<std::string> value_of(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].rfind(flag + "=", 0) == 0) return args[i].substr(flag.size() + 1);
    if (args[i] == flag) return i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0 ? args[i + 1] : "";
  }
  return std::nullopt;
}

std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return *end == '\0' ? std::optional<double>(v) : std::nullopt;
}

// "0.1" and "0.10" are the same setting; so are "data/train" and "./data/train".
bool same_setting(const std::string& a, const std::string& b) {
  const std::optional<double> x = number(a), y = number(b);
  if (x && y) return *x == *y;
  if (a == b) return true;
  std::error_code ec1, ec2;
  const fs::path p = fs::weakly_canonical(a, ec1), q = fs::weakly_canonical(b, ec2);
  return !ec1 && !ec2 && p == q;
}

std::vector<CLI::ConfigItem> settings_of(const std::string& path) {
  try {
    std::istringstream in(read_file(path, kMiB, "the run's settings"));
    return CLI::ConfigTOML().from_config(in);
  } catch (const Error& e) {
    throw Error("--checkpoint: " + std::string(e.what()));
  } catch (const std::exception& e) {  // not TOML (CLI::Error)
    throw Error("--checkpoint: " + path + ": " + e.what());
  }
}

}  // namespace

std::vector<std::string> continue_run_args(const std::vector<std::string>& args) {
  const std::optional<std::string> dir = value_of(args, "--checkpoint");
  if (!dir || dir->empty()) return args;
  const std::string settings = (fs::path(*dir) / "settings.toml").string();
  const bool holds_run = fs::exists(models::checkpoint_file(*dir));
  // Said before CLI11 would ask for the task or the budget a run would have given.
  if (!holds_run && value_of(args, "--resume"))
    throw Error("--resume: " + models::checkpoint_file(*dir) + " does not exist: --checkpoint " + *dir +
                " holds no run to continue");
  if (!holds_run || !fs::exists(settings)) return args;
  std::vector<std::string> out = args;
  const bool budget_given = value_of(args, "--minutes") || value_of(args, "--steps");
  for (const CLI::ConfigItem& item : settings_of(settings)) {
    if (!item.parents.empty() || item.inputs.size() != 1 || item.name == "checkpoint") continue;
    const std::string flag = "--" + item.name, runs = item.inputs.front();
    const std::optional<std::string> given = value_of(args, flag);
    if (models::may_change_on_resume(item.name)) {
      const bool budget = item.name == "minutes" || item.name == "steps";
      if (!given && !(budget && budget_given)) out.insert(out.end(), {flag, runs});
    } else if (!given) {
      if (item.name == "task") out.insert(out.end(), {flag, runs});
    } else if (item.name != "update-freq" && !same_setting(*given, runs)) {
      throw Error(models::changed_setting_message(flag, *given, runs, *dir));
    }
  }
  return out;
}

}  // namespace kiln::cli
