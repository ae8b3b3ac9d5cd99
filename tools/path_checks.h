#pragma once
// Checks of flags that name files and directories, run as the flags are parsed,
// so a path kiln cannot use is a flag error naming the flag (exit 2) before any
// work is done ("--trace: wants a file to write, got the directory out"), not a
// message after it that names no flag. Writing may still fail later (a full
// disk, a race); that error names the file.
//   cmd->add_option("--trace", opts.trace_path)->check(file_to_write());
#include <CLI/CLI.hpp>
#include <string>

namespace kiln::cli {

// A file to read: not '' and not a directory (a missing or unreadable file is
// the reader's error, which names it; a pipe such as /dev/stdin is fine).
CLI::Validator file_to_read();
// A directory to read: not '' and not an existing file of another kind.
CLI::Validator dir_to_read();
// A file to write (replaced atomically): not '', not a directory, and in an
// existing directory kiln may write in.
CLI::Validator file_to_write();
// The same, or '-': standard output (tools/output_file.h).
CLI::Validator file_or_stdout_to_write();
// A directory to write into, created if missing: not '', not an existing file of
// another kind, and either a directory kiln may write in or creatable (its
// nearest existing ancestor a directory kiln may write in).
CLI::Validator dir_to_write();

// Whether PATH is DIR or lies inside it, by the file system's identity of
// directories (through symlinks, "..", bind mounts), not by spelling. PATH need
// not exist.
bool is_same_or_inside(const std::string& path, const std::string& dir);

}  // namespace kiln::cli
