#include "tools/path_checks.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

// The directory PATH's file goes in, as the user spelled it ("." if none).
fs::path parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// "" if kiln may create files in DIR, else why not.
std::string cannot_write_in(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return dir.string() + " does not exist";
  if (!fs::is_directory(dir, ec)) return dir.string() + " is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "cannot write in " + dir.string() + ": " + std::strerror(errno);
  return "";
}

// A validator whose check returns "" or what is wrong with the path.
CLI::Validator path_check(std::string (*check)(const std::string&), const char* form) {
  return CLI::Validator([check](std::string& path) { return check(path); }, form);
}

}  // namespace

CLI::Validator file_to_read() {
  return path_check(
      [](const std::string& path) -> std::string {
        std::error_code ec;
        if (path.empty()) return "wants a file to read, got ''";
        if (fs::is_directory(path, ec)) return "wants a file to read, got the directory " + path;
        return "";
      },
      "FILE");
}

CLI::Validator dir_to_read() {
  return path_check(
      [](const std::string& path) -> std::string {
        std::error_code ec;
        if (path.empty()) return "wants a directory, got ''";
        if (fs::exists(path, ec) && !fs::is_directory(path, ec)) return "wants a directory, got the file " + path;
        return "";
      },
      "DIR");
}

namespace {

std::string check_file_to_write(const std::string& path) {
  std::error_code ec;
  if (path.empty()) return "wants a file to write, got ''";
  if (fs::is_directory(path, ec) || !fs::path(path).has_filename())
    return "wants a file to write, got the directory " + path;
  const std::string problem = cannot_write_in(parent_of(path));
  return problem.empty() ? "" : "cannot write " + path + ": " + problem;
}

}  // namespace

CLI::Validator file_to_write() { return path_check(check_file_to_write, "FILE"); }

CLI::Validator file_or_stdout_to_write() {
  return path_check([](const std::string& path) { return path == "-" ? std::string() : check_file_to_write(path); },
                    "FILE");
}

CLI::Validator dir_to_write() {
  return path_check(
      [](const std::string& path) -> std::string {
        std::error_code ec;
        if (path.empty()) return "wants a directory to write in, got ''";
        if (fs::exists(path, ec)) {
          if (!fs::is_directory(path, ec)) return "wants a directory to write in, got the file " + path;
          return cannot_write_in(path);
        }
        // Created with its missing parents: the nearest existing ancestor must take them.
        fs::path ancestor = fs::absolute(path, ec).lexically_normal();
        while (!fs::exists(ancestor, ec) && ancestor.has_relative_path()) ancestor = ancestor.parent_path();
        const std::string problem = cannot_write_in(ancestor);
        return problem.empty() ? "" : "cannot create " + path + ": " + problem;
      },
      "DIR");
}

bool is_same_or_inside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(path, ec);  // symlinks and ".." of the part that exists resolved
  if (ec) return false;
  for (;;) {
    if (fs::equivalent(p, dir, ec)) return true;
    if (!p.has_relative_path()) return false;  // the root
    p = p.parent_path();
  }
}

}  // namespace kiln::cli
