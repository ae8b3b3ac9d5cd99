#include "engine/atomic_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/ir/error.h"

namespace kiln {

void write_file_atomically(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const std::string tmp = path + ".tmp";
  try {
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) throw Error(std::string("cannot create ") + tmp + ": " + std::strerror(errno));
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.close();
      if (!out) throw Error("cannot write " + tmp);
    }
    fs::rename(tmp, path);
  } catch (const std::exception& e) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw Error(path + ": " + e.what());
  }
}

}  // namespace kiln
