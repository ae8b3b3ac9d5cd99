#pragma once
// Where a command's one output goes: `-o FILE` (written atomically, so a failed
// run leaves an existing file as it was), or `-o -` (or no -o where stdout is
// the default): standard output, as for most Unix tools. Header-only: `kiln`
// and `kiln-import` share it.
#include <iostream>
#include <string>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"

namespace kiln::cli {

// Whether -o PATH means standard output.
inline bool is_stdout(const std::string& path) { return path.empty() || path == "-"; }

// Writes `text` to standard output or to the file PATH, atomically.
inline void write_output(const std::string& path, const std::string& text) {
  if (is_stdout(path)) {
    std::cout << text << std::flush;
    if (!std::cout) throw Error("cannot write to standard output");
  } else {
    write_file_atomically(path, text);
  }
}

}  // namespace kiln::cli
