#pragma once
// What an atomic write may leave beside PATH (engine/atomic_file.h): its
// temporaries PATH.tmp-* and backups PATH.bak-*. Tests check that none remain.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

// The pid of a process that has exited (and been reaped): no process has it now,
// so side files named after it are stale.
inline pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

inline std::vector<std::string> side_files(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  const std::string base = p.filename().string();
  std::vector<std::string> found;
  std::error_code ec;
  for (fs::directory_iterator it(p.has_parent_path() ? p.parent_path() : fs::path("."), ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(base + ".tmp-", 0) == 0 || name.rfind(base + ".bak-", 0) == 0) found.push_back(name);
  }
  return found;
}
