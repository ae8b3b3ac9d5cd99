#pragma once
// What a user reads when the command line is wrong (exit 2): a mistyped flag
// or command gets the nearest valid one ("did you mean --batch-tokens?"), and
// the message points at the help of the command that was given (`kiln train
// --help`), not only at `kiln --help`. CLI11 reports a missing required flag
// before a flag it does not know, so a typo would hide behind "--checkpoint is
// required": the arguments are searched for unknown flags first. Header-only:
// `kiln` and `kiln-import` share it.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cli {

// The optimal string alignment distance: insertions, deletions, substitutions
// and swaps of two adjacent characters ("trian", "train") each cost 1.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The name of `names` nearest to `typed` if it is near enough to be a typo
// of it (at most 2 edits, or a third of its letters for a longer name), or
// else the one name that `typed` begins ("--batch" for --batch-tokens); "" if
// none. Ties go to the first in `names`.
inline std::string nearest_name(const std::string& typed, const std::vector<std::string>& names) {
  const std::string_view bare = std::string_view(typed).substr(typed.find_first_not_of('-') == std::string::npos
                                                                    ? typed.size()
                                                                    : typed.find_first_not_of('-'));
  if (bare.size() < 2) return "";  // "-x": any one-letter flag is as near
  std::string best;
  size_t best_distance = std::max<size_t>(2, bare.size() / 3) + 1;
  for (const std::string& name : names) {
    const size_t d = edit_distance(typed, name);
    if (d < best_distance) best = name, best_distance = d;
  }
  if (!best.empty()) return best;
  std::vector<std::string> extended;
  for (const std::string& name : names)
    if (name.size() > typed.size() && name.compare(0, typed.size(), typed) == 0) extended.push_back(name);
  return extended.size() == 1 ? extended.front() : "";
}

// `cmd`'s flags as typed: "--name" and "-n" of each option (not positionals).
inline std::vector<std::string> flag_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd.get_options()) {
    for (const std::string& l : opt->get_lnames()) names.push_back("--" + l);
    for (const std::string& s : opt->get_snames()) names.push_back("-" + s);
  }
  return names;
}

// Whether CLI11 reads `arg` as a flag: "--name", "--name=value", "-x", "-xvalue"
// (not "-", "-1" or "-0.5": values).
inline bool looks_like_flag(const std::string& arg) {
  if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) return true;
  return arg.size() > 1 && arg[0] == '-' && arg[1] != '-' && !(arg[1] >= '0' && arg[1] <= '9') && arg[1] != '.';
}

// The first of `args` (what follows `cmd`'s name on the command line) that is
// a flag `cmd` does not have, as typed up to any '=' ("" if none). The values
// a known flag takes are skipped, as CLI11 takes them; "--" ends the flags.
inline std::string unknown_flag(const CLI::App& cmd, const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") return "";
    if (!looks_like_flag(arg)) continue;
    const bool is_long = arg[1] == '-';
    const size_t eq = is_long ? arg.find('=') : std::string::npos;
    const std::string name = is_long ? arg.substr(0, eq) : arg.substr(0, 2);
    const CLI::Option* opt = cmd.get_option_no_throw(name);
    if (!opt) return is_long ? name : arg.substr(0, arg.find('='));
    const bool value_attached = is_long ? eq != std::string::npos : arg.size() > 2;
    if (opt->get_type_size_min() > 0 && !value_attached)
      i += static_cast<size_t>(std::max(1, std::min(opt->get_type_size_min(), opt->get_items_expected_min())));
  }
  return "";
}

// "unknown flag --batch-tokns; did you mean --batch-tokens?" if `args` (the
// arguments after `cmd`'s name) hold a flag `cmd` lacks; "" if not.
inline std::string unknown_flag_message(const CLI::App& cmd, const std::vector<std::string>& args) {
  const std::string flag = unknown_flag(cmd, args);
  if (flag.empty()) return "";
  const std::string near = nearest_name(flag, flag_names(cmd));
  return "unknown flag " + flag + (near.empty() ? "" : "; did you mean " + near + "?");
}

// The line that ends every usage error of `command` ("kiln train").
inline std::string help_hint(const std::string& command) { return "Run '" + command + " --help' for usage."; }

}  // namespace kiln::cli
