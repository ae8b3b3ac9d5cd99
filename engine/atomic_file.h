#pragma once
#include <string>
#include <string_view>

namespace kiln {

// Writes `bytes` to PATH.tmp, then renames it over PATH, so an existing PATH is
// never left half-written (checkpoints, .npy files, .kir outputs). On failure the
// temporary file is removed and kiln::Error names PATH.
void write_file_atomically(const std::string& path, std::string_view bytes);

}  // namespace kiln
