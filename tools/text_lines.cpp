#include "tools/text_lines.h"

#include <filesystem>
#include <fstream>

#include "engine/ir/error.h"

namespace kiln::cli {

namespace {

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

}  // namespace

bool read_line(std::istream& in, std::string& line, const std::string& name, int64_t number) {
  line.clear();
  for (int c; (c = in.get()) != std::char_traits<char>::eof();) {
    if (c == '\n') return true;
    if (line.size() == kMaxLineBytes)
      throw Error(name + ": line " + std::to_string(number) + " is longer than " + std::to_string(kMaxLineBytes) +
                  " bytes; kiln reads one sentence per line of text");
    line.push_back(static_cast<char>(c));
    if (number == 1 && line == kUtf8Bom) line.clear();  // a byte-order mark starts the input: not text
  }
  if (in.bad()) throw Error(name + ": cannot read line " + std::to_string(number));
  return !line.empty();
}

std::vector<std::string> read_lines(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(flag + ": cannot open " + path);
  std::vector<std::string> lines;
  for (std::string line; read_line(in, line, path, static_cast<int64_t>(lines.size()) + 1);) lines.push_back(line);
  return lines;
}

int64_t count_lines(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return 0;
  std::ifstream in(path, std::ios::binary);
  int64_t lines = 0;
  char last = '\n';
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    const std::streamsize n = in.gcount();
    for (std::streamsize i = 0; i < n; ++i) lines += buf[i] == '\n';
    last = buf[n - 1];
  }
  return lines + (last != '\n');
}

}  // namespace kiln::cli
