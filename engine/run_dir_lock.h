#pragma once
// One writer per run directory: `kiln train --checkpoint DIR`, `kiln average -o
// DIR` and `kiln prepare -o DIR` hold an advisory lock (flock) on DIR itself
// while they write it, so a second command into DIR refuses at once instead of
// both writing and one's work being silently lost. The kernel releases the
// lock when the holder exits, however it ends (a crash or kill -9 too), and
// it leaves no file behind.
#include <string>

namespace kiln {

class RunDirLock {
 public:
  // Creates DIR (and its parents) if missing and locks it; kiln::Error naming
  // `flag` and DIR if it cannot create or open it, or if another process holds
  // the lock (a file system that cannot lock leaves it unlocked). A DIR it
  // created is removed when unlocked if nothing was written into it.
  RunDirLock(const std::string& dir, const std::string& flag);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  std::string created_;  // DIR if this lock made it
  int fd_ = -1;
};

}  // namespace kiln
