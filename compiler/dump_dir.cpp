#include "compiler/dump_dir.h"

#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"

namespace kiln::compiler {
namespace {

// A graph's name as one path component (a name from Python may hold anything).
std::string file_name_of(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out += plain ? c : '_';
  }
  return out.empty() ? "graph" : out;
}

}  // namespace

std::string graph_dump_dir(const std::string& root, const std::string& graph_name) {
  const std::string name = file_name_of(graph_name);
  static std::mutex mutex;
  static std::map<std::string, int> compiles;  // by root/name: how many this process has dumped
  int n = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    n = ++compiles[(std::filesystem::path(root) / name).string()];
  }
  const std::string dir = (std::filesystem::path(root) / (n == 1 ? name : name + "." + std::to_string(n))).string();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw Error("--dump-dir: cannot create the directory " + dir + (ec ? ": " + ec.message() : ""));
  return dir;
}

void write_dump(const std::string& dir, const std::string& file, const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(dir) / file;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) throw Error("--dump-dir: cannot create the directory " + path.parent_path().string() + ": " + ec.message());
  // Many small files no crash must keep: no flush per file.
  write_file_atomically(path.string(), text, Durability::cache_entry);
}

}  // namespace kiln::compiler
