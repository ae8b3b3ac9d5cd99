#include "tools/config_file.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <sstream>
#include <string_view>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/eval/utf8.h"

namespace kiln::cli {
namespace {

bool given(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(),
                     [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
}

std::string_view trimmed(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// Whether a quoted value ends on its line: a TOML "basic" string (with
// backslash escapes) or a 'literal' one.
bool terminated(std::string_view value) {
  const char quote = value.front();
  for (size_t i = 1; i < value.size(); ++i) {
    if (quote == '"' && value[i] == '\\') ++i;
    else if (value[i] == quote) return true;
  }
  return false;
}

// What CLI11's reader would take without a word or read otherwise than meant,
// checked on the text, whose lines it knows: a key that is an action (--help
// would run), a key given twice, an array (kiln's flags take one value each),
// an unterminated string. Every one an error naming the file, the line and the key.
void check_lines(const std::string& text, const std::string& path) {
  std::map<std::string, int> first_line;  // [section].key -> line
  std::string section;
  std::istringstream in(text);
  int number = 0;
  for (std::string raw; std::getline(in, raw);) {
    ++number;
    const std::string_view line = trimmed(raw);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      section = std::string(line);
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;  // CLI11's reader names what it cannot parse
    const std::string key(trimmed(line.substr(0, eq)));
    const std::string_view value = trimmed(line.substr(eq + 1));
    const std::string where = "--config-file " + path + ":" + std::to_string(number) + ": key '" + key + "'";
    if (key == "help" || key == "help-all" || key == "version" || key == "config-file")
      throw Error(where + " is an action, not a setting (give --" + key + " on the command line)");
    const auto [first, fresh] = first_line.emplace(section + key, number);
    if (!fresh) throw Error(where + " is given twice (first on line " + std::to_string(first->second) + ")");
    if (!value.empty() && value.front() == '[')
      throw Error(where + " has an array value; each key sets its flag to one value");
    if (!value.empty() && (value.front() == '"' || value.front() == '\'') && !terminated(value))
      throw Error(where + ": the string is not terminated on its line");
  }
}

// Whether `command`'s flag `flag` excludes a flag that `args` gives.
bool excluded_by(const std::vector<std::string>& args, const CLI::App* command, const std::string& flag) {
  const CLI::Option* option = command ? command->get_option_no_throw(flag) : nullptr;
  if (!option) return false;
  for (const CLI::Option* other : option->get_excludes())
    for (const std::string& name : other->get_lnames())
      if (given(args, "--" + name)) return true;
  return false;
}

}  // namespace

std::vector<std::string> expand_config_file(const std::vector<std::string>& args, const CLI::App* command) {
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
  std::string text;
  try {
    text = std::string(models::without_bom(read_file(path, kMiB, "a config file")));
  } catch (const Error& e) {
    throw Error("--config-file " + path + ": " + e.what());
  }
  check_lines(text, path);
  try {
    std::istringstream in(text);
    items = CLI::ConfigTOML().from_config(in);
  } catch (const std::exception& e) {  // not TOML/INI (CLI::Error)
    throw Error("--config-file " + path + ": " + e.what());
  }
  const std::vector<std::string> command_line = out;
  for (const CLI::ConfigItem& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // CLI11's section markers
    if (!item.parents.empty())
      throw Error("--config-file " + path + ": key '" + item.fullname() + "' is in a section; flags are top-level keys");
    const std::string flag = "--" + item.name;
    if (given(out, flag) || excluded_by(command_line, command, flag)) continue;
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
