#pragma once
// The bytes of a file, for tests that compare files before and after a command
// ("" if it cannot be read).
#include <fstream>
#include <sstream>
#include <string>

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
