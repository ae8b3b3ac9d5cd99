#pragma once
// The on-disk cache of compiled kernels, like ccache or XLA's persistent
// compilation cache: one object file per kernel, named by the kernel's symbol
// (a hash of its key: canonical text, target CPU and features, optimization
// level, and the build of kiln that compiled it).
//
// An entry holds its full key and a checksum, so a corrupt or truncated entry,
// or a hash collision, reads as a miss and is rebuilt. Entries are written
// atomically (engine/atomic_file.h: a temporary created exclusively under a
// random name, then renamed into place), so a concurrent process sees a whole
// entry or none and a symlink planted in the directory is never written
// through. An entry is read without following a symlink or waiting on a FIFO:
// anything at its path but a regular file is a miss. A directory that cannot be
// created or written is reported once on stderr and the cache is off;
// compiling goes on.
#include <optional>
#include <string>
#include <string_view>

namespace kiln::compiler {

class KernelCache {
 public:
  // `dir` empty: the cache is off.
  explicit KernelCache(std::string dir);

  // $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln ("" if none is set).
  static std::string default_dir();

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // The object stored for `symbol` if its entry is whole and holds exactly `key`.
  std::optional<std::string> load(const std::string& symbol, const std::string& key) const;
  // Stores an entry (best effort: failures turn the cache off with one warning).
  void store(const std::string& symbol, const std::string& key, std::string_view object);

 private:
  std::string path_of(const std::string& symbol) const;

  std::string dir_;
};

// An identifier of the running kiln build: the ELF build ID of the object kiln's
// code is in (the executable, or the Python module's shared object), or that
// file's size and time if it has none. Part of every cache key, so a rebuilt
// kiln never loads kernels an older build compiled.
const std::string& build_identity();

}  // namespace kiln::compiler
