#pragma once
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

// Writes `bytes` to a temporary file beside PATH, flushes it to disk (fsync),
// then renames it over PATH, so an existing PATH is never left half-written, even
// by a crash or power loss (checkpoints, .npy files, .kir outputs). The temporary
// file (PATH.tmp-PID-RANDOM) is created exclusively: never an existing file, never
// through a symlink. Temporaries a killed process left beside PATH are removed.
// On failure the temporary file is removed, PATH is untouched and kiln::Error
// names PATH.
void write_file_atomically(const std::string& path, std::string_view bytes);

// The same for a file made of several pieces written one after the other (a header
// and large tensors), without first copying them into one buffer.
void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces);

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

}  // namespace kiln
