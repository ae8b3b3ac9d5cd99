// read_file: the whole file as bytes, or an error naming it; never more than its
// limit, whatever the file claims or however long it goes on.
#include "engine/ir/read_file.h"

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "cli/temp_dir.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"

using kiln::Error;
using kiln::read_file;

namespace {

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

}  // namespace

TEST_CASE("read_file gives back every byte written, and names a file it cannot read") {
  TempDir dir;
  std::string bytes(200000, 'x');  // past one read's buffer
  bytes[7] = '\0';
  write(dir.file("data"), bytes);
  CHECK(read_file(dir.file("data"), bytes.size(), "data") == bytes);
  write(dir.file("empty"), "");
  CHECK(read_file(dir.file("empty"), 0, "data").empty());
  CHECK_THROWS_WITH_AS(read_file(dir.file("missing"), kiln::kMiB, "data"),
                       ("cannot read " + dir.file("missing") + ": No such file or directory").c_str(), Error);
  std::filesystem::create_directory(dir.file("sub"));
  CHECK_THROWS_WITH_AS(read_file(dir.file("sub"), kiln::kMiB, "data"),
                       doctest::Contains(("cannot read " + dir.file("sub")).c_str()), Error);
}

TEST_CASE("read_file stops at its limit, naming the file, the limit and what it reads") {
  TempDir dir;
  write(dir.file("big"), std::string(1001, 'x'));
  CHECK_THROWS_WITH_AS(read_file(dir.file("big"), 1000, "a test file"),
                       (dir.file("big") + ": larger than the 1000 bytes limit for a test file").c_str(), Error);
  write(dir.file("big"), std::string(kiln::kMiB + 1, 'x'));
  CHECK_THROWS_WITH_AS(read_file(dir.file("big"), kiln::kMiB, "a test file"),
                       (dir.file("big") + ": larger than the 1 MiB limit for a test file").c_str(), Error);
}

TEST_CASE("an endless file given as .kir ends with an error, fast") {
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(kiln::parse_kir_file("/dev/zero"), "/dev/zero: larger than the 64 MiB limit for a .kir file",
                       Error);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}
