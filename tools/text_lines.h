#pragma once
// Reading text one sentence per line (`kiln translate`'s input, `kiln eval`'s
// --src and --ref files), with a limit on a line's length: past it the input
// is not sentences (an endless /dev/zero, a binary file) and reading on would
// only grow memory.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace kiln::cli {

constexpr size_t kMaxLineBytes = 64 * 1024;

// Reads line `number` (1-based) of the input called `name` into `line`, without
// its '\n' (nor, on line 1, a UTF-8 byte-order mark); false at the end of the input. kiln::Error naming the input and the
// line if it is longer than kMaxLineBytes, or if reading fails.
bool read_line(std::istream& in, std::string& line, const std::string& name, int64_t number);

// Every line of the file at `path`; kiln::Error naming `flag` and the path if it
// cannot be read.
std::vector<std::string> read_lines(const std::string& path, const std::string& flag);

// The lines of a regular file (a last one without '\n' counted), for a progress
// line's total; 0 (unknown) for anything else, which may be read only once, and
// for a file that cannot be read (its reader names it).
int64_t count_lines(const std::string& path);

}  // namespace kiln::cli
