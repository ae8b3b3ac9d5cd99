#include "engine/run_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "engine/ir/error.h"

namespace kiln {

RunDirLock::RunDirLock(const std::string& dir, const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::create_directories(dir, ec)) created_ = dir;
  if (ec) throw Error(flag + " " + dir + ": " + ec.message());
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw Error(flag + " " + dir + ": " + std::strerror(errno));
  // A file system that cannot lock (ENOLCK, EOPNOTSUPP: some network mounts)
  // leaves the directory unlocked, as it was before locks, rather than unusable.
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    ::close(fd_);
    fd_ = -1;
    throw Error(flag + " " + dir + ": another kiln command is writing this directory now; wait for it to end, or "
                "choose another directory");
  }
}

RunDirLock::~RunDirLock() {
  if (!created_.empty()) ::rmdir(created_.c_str());  // fails, as it should, unless DIR is empty
  ::close(fd_);
}

}  // namespace kiln
