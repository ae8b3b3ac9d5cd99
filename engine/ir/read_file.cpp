#include "engine/ir/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/ir/error.h"

namespace kiln {
namespace {

// Closes the descriptor on every way out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

[[noreturn]] void fail_read(const std::string& path, int err) {
  throw Error("cannot read " + path + ": " + std::strerror(err));
}

// "256 MiB", or "100 bytes" for a limit that is not whole MiB.
std::string limit_str(size_t limit) {
  return limit % kMiB == 0 ? std::to_string(limit / kMiB) + " MiB" : std::to_string(limit) + " bytes";
}

// The rest of an open file, up to `limit` bytes.
std::string read_all(const Fd& file, const std::string& path, size_t limit, std::string_view what) {
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(file.fd, buf, sizeof buf);
    if (n == 0) return bytes;
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_read(path, errno);
    }
    if (static_cast<size_t>(n) > limit - bytes.size()) {
      std::string msg = path + ": larger than the ";
      msg += limit_str(limit) + " limit for ";
      msg += what;
      throw Error(msg);
    }
    bytes.append(buf, static_cast<size_t>(n));
  }
}

}  // namespace

std::string read_file(const std::string& path, size_t limit, std::string_view what) {
  const Fd file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) fail_read(path, errno);
  return read_all(file, path, limit, what);
}

std::string read_regular_file(const std::string& path, size_t limit, std::string_view what) {
  const Fd file{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)};
  if (file.fd < 0) fail_read(path, errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) fail_read(path, errno);
  if (!S_ISREG(st.st_mode)) throw Error(path + ": not a regular file");
  return read_all(file, path, limit, what);
}

}  // namespace kiln
