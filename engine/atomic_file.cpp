#include "engine/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/ir/error.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail_errno(const std::string& what, const std::string& file) {
  throw Error(what + " " + file + ": " + std::strerror(errno));
}

// Writes all of `bytes` to fd, retrying short writes and interruptions.
void write_all(int fd, std::string_view bytes, const std::string& file) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno("cannot write", file);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// Makes the rename itself durable. Best effort: some file systems refuse to fsync
// a directory, and the data is already safe either way.
void sync_directory_of(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes) {
  write_file_atomically(path, std::span<const std::string_view>(&bytes, 1));
}

void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces) {
  const std::string tmp = path + ".tmp";
  int fd = -1;
  bool created = false;  // only a temporary file made here is removed on failure
  try {
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fail_errno("cannot create", tmp);
    created = true;
    for (std::string_view piece : pieces) write_all(fd, piece, tmp);
    if (::fsync(fd) != 0) fail_errno("cannot flush", tmp);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) fail_errno("cannot close", tmp);
    fs::rename(tmp, path);
  } catch (const std::exception& e) {
    if (fd >= 0) ::close(fd);
    std::error_code ignored;
    if (created) fs::remove(tmp, ignored);
    throw Error(path + ": " + e.what());
  }
  sync_directory_of(path);
}

}  // namespace kiln
