#pragma once
#include <span>
#include <string>
#include <string_view>

namespace kiln {

// Writes `bytes` to PATH.tmp, flushes it to disk (fsync), then renames it over
// PATH, so an existing PATH is never left half-written, even by a crash or power
// loss (checkpoints, .npy files, .kir outputs). On failure the temporary file is
// removed, PATH is untouched and kiln::Error names PATH.
void write_file_atomically(const std::string& path, std::string_view bytes);

// The same for a file made of several pieces written one after the other (a header
// and large tensors), without first copying them into one buffer.
void write_file_atomically(const std::string& path, std::span<const std::string_view> pieces);

}  // namespace kiln
