#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// What a write owes beyond replacing PATH whole.
enum class Durability {
  // Flushed to disk (the file, then its directory), so even a crash or power loss
  // keeps the previous file or the new one whole; temporaries a killed process
  // left beside PATH are removed.
  durable,
  // Neither: a cache entry, which a crash may lose (a lost entry is a miss) and
  // which shares its directory with thousands of others, so a flush and a scan
  // of the directory per entry would cost more than the entry saves. The cache
  // sweeps its directory once instead (remove_stale_temporaries_in).
  cache_entry,
};

// Writes `bytes` to a temporary file beside PATH, then renames it over PATH, so
// an existing PATH is never left half-written (checkpoints, .npy files, .kir
// outputs, kernel cache entries). The temporary file (PATH.tmp-PID-RANDOM) is
// created exclusively: never an existing file, never through a symlink; and the
// rename replaces a symlink at PATH rather than writing where it points. On
// failure the temporary file is removed, PATH is untouched and kiln::Error
// names PATH.
void write_file_atomically(const std::string& path, std::string_view bytes,
                           Durability durability = Durability::durable);

// The same for a file made of several pieces written one after the other (a header
// and large tensors), without first copying them into one buffer.
void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces,
                           Durability durability = Durability::durable);

// Several files, all or nothing (a command with several outputs): every file is
// staged and flushed first, then each is renamed over its path; if a write or a
// rename fails, the paths already replaced get their previous contents back
// (kept as hard links until the end) and kiln::Error names the file that failed.
struct FileBytes {
  std::string path;
  std::string bytes;
  std::string_view data{};  // written after `bytes`, not copied (a tensor's memory); must outlive the call
};
void write_files_atomically(const std::vector<FileBytes>& files);

// The same for files made of any number of pieces (a safetensors header and its
// tensors), none of them copied; the pieces must outlive the call.
struct FilePieces {
  std::string path;
  std::vector<std::string_view> pieces;
};
void write_files_atomically(const std::vector<FilePieces>& files);

// Removes the temporaries and backups (NAME.tmp-PID-RANDOM, NAME.bak-PID-RANDOM)
// in DIR whose process is gone: what a kill -9 left behind. Those of a live
// process (a concurrent writer) stay.
void remove_stale_temporaries_in(const std::string& dir);

}  // namespace kiln
