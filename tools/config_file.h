#pragma once
// `--config-file FILE` on any subcommand: a TOML or INI file (read by CLI11's
// reader) whose keys are the subcommand's long flag names, e.g. `d-model = 256`,
// `resume = true`. Its settings join the command line wherever the command line
// does not give that flag, so flags given there win. `kiln train` writes one per
// run (DIR/settings.toml). A key whose flag excludes one the command line gives
// (--minutes against --steps) is left out too: the command line's choice wins.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kiln::cli {

// The arguments with `--config-file FILE` replaced by FILE's settings (a UTF-8
// byte-order mark at its start ignored). kiln::Error naming FILE for a file that
// cannot be read or parsed, or a key in a [section]; naming FILE, the line and
// the key for a key that is an action (help, version), a key given twice, an
// array value, an unterminated string. `command`: the subcommand whose flags'
// exclusions are honoured (nullptr: none).
std::vector<std::string> expand_config_file(const std::vector<std::string>& args,
                                            const CLI::App* command = nullptr);

}  // namespace kiln::cli
