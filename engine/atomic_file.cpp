#include "engine/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>

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

// "PATH.tmp-PID-" (or ".bak-"): what this process's temporaries beside PATH start with.
std::string side_prefix(const std::string& path, const char* kind) {
  return path + "." + kind + "-" + std::to_string(::getpid()) + "-";
}

// Claims a fresh name beside PATH with `make(name)`, which creates it and fails
// with EEXIST if the name is taken (open with O_EXCL, which also refuses a
// symlink; link). The suffix is random, so no one can plant a file or link there
// in advance.
template <class Make>
std::string claim_fresh_name(const std::string& path, const char* kind, Make make) {
  static thread_local std::mt19937_64 rng(std::random_device{}() ^ static_cast<uint64_t>(::getpid()));
  for (int attempt = 0;; ++attempt) {
    char suffix[17];
    std::snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(rng()));
    const std::string name = side_prefix(path, kind) + suffix;
    if (make(name)) return name;
    if (errno != EEXIST || attempt == 100) fail_errno("cannot create", name);
  }
}

// The process that made a temporary or backup named BASE.tmp-PID-RANDOM (or
// BASE.bak-PID-RANDOM, RANDOM 16 hex digits) if NAME is one whose BASE is
// `base` (any BASE if `base` is empty); 0 if it is not one.
long side_file_owner(std::string_view name, std::string_view base) {
  constexpr size_t kRandomDigits = 16;
  if (name.size() <= kRandomDigits ||
      name.substr(name.size() - kRandomDigits).find_first_not_of("0123456789abcdef") != std::string_view::npos)
    return 0;
  name.remove_suffix(kRandomDigits);
  if (name.back() != '-') return 0;
  name.remove_suffix(1);
  const size_t pid_at = name.find_last_not_of("0123456789") + 1;  // npos + 1 == 0: no kind before the pid
  long pid = 0;
  if (pid_at == 0 || std::from_chars(name.data() + pid_at, name.data() + name.size(), pid).ptr !=
                         name.data() + name.size())
    return 0;
  name.remove_suffix(name.size() - pid_at);
  if (!name.ends_with(".tmp-") && !name.ends_with(".bak-")) return 0;
  name.remove_suffix(5);
  if (base.empty() ? name.empty() : name != base) return 0;
  return pid;
}

// Removes the side files in DIR (those beside `base`, or all if it is empty)
// whose process is gone: what a kill -9 left behind. Those of a live process (a
// concurrent writer) stay.
void remove_stale_side_files(const fs::path& dir, std::string_view base) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const long pid = side_file_owner(it->path().filename().native(), base);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

// Writes the pieces to a new temporary file beside PATH (flushed to disk if
// durable); returns its name. On failure nothing is left and kiln::Error names PATH.
std::string stage(const std::string& path, std::span<const std::string_view> pieces, Durability durability) {
  if (const fs::path target(path); durability == Durability::durable && target.has_filename()) {
    remove_stale_side_files(target.has_parent_path() ? target.parent_path() : fs::path("."),
                            target.filename().native());
  }
  std::string tmp;
  int fd = -1;
  try {
    tmp = claim_fresh_name(path, "tmp", [&fd](const std::string& name) {
      fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      return fd >= 0;
    });
    for (std::string_view piece : pieces) write_all(fd, piece, tmp);
    if (durability == Durability::durable && ::fsync(fd) != 0) fail_errno("cannot flush", tmp);
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) fail_errno("cannot close", tmp);
  } catch (const std::exception& e) {
    if (fd >= 0) ::close(fd);
    std::error_code ignored;
    if (!tmp.empty()) fs::remove(tmp, ignored);
    throw Error(path + ": " + e.what());
  }
  return tmp;
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes, Durability durability) {
  write_file_atomically(path, std::span<const std::string_view>(&bytes, 1), durability);
}

void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces, Durability durability) {
  const std::string tmp = stage(path, pieces, durability);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(path + ": cannot replace it: " + ec.message());
  }
  if (durability == Durability::durable) sync_directory_of(path);
}

void write_files_atomically(const std::vector<FileBytes>& files) {
  std::vector<FilePieces> pieces;
  for (const FileBytes& f : files) pieces.push_back({f.path, {f.bytes, f.data}});
  write_files_atomically(pieces);
}

void write_files_atomically(const std::vector<FilePieces>& files) {
  if (files.size() == 1) return write_file_atomically(files[0].path, files[0].pieces);  // no backup needed
  std::vector<std::string> staged;
  std::vector<std::string> backups(files.size());  // a hard link to each path's previous file, if it had one
  size_t renamed = 0;
  const auto undo = [&] {
    std::error_code ignored;
    for (size_t i = 0; i < renamed; ++i) {
      if (!backups[i].empty()) fs::rename(backups[i], files[i].path, ignored);
      else fs::remove(files[i].path, ignored);
    }
    for (size_t i = renamed; i < staged.size(); ++i) fs::remove(staged[i], ignored);
    for (size_t i = renamed; i < backups.size(); ++i)
      if (!backups[i].empty()) fs::remove(backups[i], ignored);
  };
  try {
    for (const FilePieces& f : files) staged.push_back(stage(f.path, f.pieces, Durability::durable));
    for (size_t i = 0; i < files.size(); ++i) {
      const fs::file_status st = fs::symlink_status(files[i].path);
      if (!fs::exists(st) || fs::is_directory(st)) continue;  // nothing to keep (a directory fails the rename)
      const std::string& path = files[i].path;
      backups[i] = claim_fresh_name(path, "bak", [&path](const std::string& name) {
        return ::link(path.c_str(), name.c_str()) == 0;
      });
    }
    for (; renamed < files.size(); ++renamed) {
      std::error_code ec;
      fs::rename(staged[renamed], files[renamed].path, ec);
      if (ec) throw Error(files[renamed].path + ": cannot replace it: " + ec.message());
    }
  } catch (const std::exception& e) {
    undo();
    throw Error(std::string(e.what()) + " (none of the " + std::to_string(files.size()) + " files was changed)");
  }
  std::error_code ignored;
  for (const std::string& b : backups)
    if (!b.empty()) fs::remove(b, ignored);
  for (const FilePieces& f : files) sync_directory_of(f.path);
}

void remove_stale_temporaries_in(const std::string& dir) { remove_stale_side_files(dir, {}); }

}  // namespace kiln
