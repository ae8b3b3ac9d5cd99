#pragma once
// Reads a whole file as a stream, with a size limit. The size a stat reports is
// never trusted: pipes, /dev/stdin and endless character devices (/dev/zero)
// are read like any file, and reading stops with an error as soon as the limit
// is passed, so an endless or huge input ends fast without eating memory.
#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

constexpr size_t kMiB = size_t{1} << 20;

// The whole of PATH as bytes. kiln::Error "cannot read PATH: reason" if it cannot
// be opened or read, and "PATH: larger than the N MiB limit for WHAT" (WHAT e.g.
// "a .kir file"; the limit in bytes if it is not whole MiB) once more than
// `limit` bytes have come.
std::string read_file(const std::string& path, size_t limit, std::string_view what);

// The same for a file in a place others may write (the kernel cache): PATH is
// opened without following a symlink and without waiting for a writer, and
// anything but a regular file (a FIFO, a device, a directory) is kiln::Error
// "PATH: not a regular file", so a planted link or FIFO neither redirects nor
// hangs the read.
std::string read_regular_file(const std::string& path, size_t limit, std::string_view what);

}  // namespace kiln
