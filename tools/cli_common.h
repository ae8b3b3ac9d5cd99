#pragma once
// The kiln command's subcommands. main.cpp defines the flags (CLI11) and turns
// errors into messages and exit codes; each subcommand lives in its own cmd_*.cpp
// and reports failure by throwing kiln::Error.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::cli {

// Commands that read a .kir file let parse_kir_file's errors through
// ("FILE:LINE:COL: error: ...").

// `kiln check FILE`: parses and verifies, then prints the canonical text form.
void check(const std::string& path);

// `kiln dot FILE`: prints Graphviz DOT.
void dot(const std::string& path);

// `kiln ops`: lists the registered ops with their operand counts, attributes and summaries.
void list_ops();

// `kiln run FILE --input NAME=PATH ... --output-dir DIR --seed N --backend B`.
struct RunOptions {
  std::string graph_path;
  std::vector<std::string> inputs;  // "NAME=PATH.npy"
  std::string output_dir = "out";
  uint64_t seed = 0;
  std::string backend = "interp";
};
void run(const RunOptions& opts);

// Splits "NAME=PATH" at the first '='; throws kiln::Error unless both sides are non-empty.
std::pair<std::string, std::string> split_binding(const std::string& arg);

}  // namespace kiln::cli
