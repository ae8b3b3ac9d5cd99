#pragma once
// Files and text for tests: a file's bytes ("" if it cannot be read), writing
// one, and whether a command's output contains a part.
#include <fstream>
#include <sstream>
#include <string>

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
