#pragma once
// A command that reads files and writes files must never write over one it
// reads (`kiln translate -i f -o f` would replace the text by its
// translation): an output is compared with every input by the file system's
// identity (device and inode), so a hard link, a symlink or another spelling
// of the same file is caught too. Header-only: `kiln` and `kiln-import` share it.
#include <filesystem>
#include <string>
#include <vector>

#include "engine/ir/error.h"

namespace kiln::cli {

// A path as the user gave it, with the flag that gave it ("-i", "FILE", or
// "--input x=", which the path follows without a space).
struct FlagPath {
  std::string flag;
  std::string path;
};

// kiln::Error "-o F is the same file as -i G, which kiln reads; write elsewhere"
// if `out` is one of `inputs` ({"stdin", "/dev/stdin"} is named "stdin"); an
// `out` of "-" is standard output, no file. Call it before anything is written.
inline void check_output_is_no_input(const FlagPath& out, const std::vector<FlagPath>& inputs) {
  if (out.path == "-") return;  // standard output (tools/output_file.h)
  for (const FlagPath& in : inputs) {
    // A missing output (or input) is no input; nor is a terminal or a pipe (stdin
    // and -o /dev/stdout may be one tty), which no write of kiln's replaces.
    std::error_code ec;
    if (!std::filesystem::is_regular_file(in.path, ec) || !std::filesystem::equivalent(out.path, in.path, ec))
      continue;
    const std::string input = in.flag == "stdin"       ? in.flag
                              : in.flag.ends_with('=') ? in.flag + in.path  // "--input x=" PATH
                                                       : in.flag + " " + in.path;
    throw Error(out.flag + " " + out.path + " is the same file as " + input + ", which kiln reads; write elsewhere");
  }
}

}  // namespace kiln::cli
