// read_file: the whole file as bytes, or an error naming it.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli/temp_dir.h"
#include "engine/atomic_file.h"
#include "engine/ir/error.h"

using kiln::Error;

TEST_CASE("read_file gives back every byte written, and names a file it cannot read") {
  TempDir dir;
  std::string bytes(200000, 'x');  // past one read's buffer
  bytes[7] = '\0';
  kiln::write_file_atomically(dir.file("data"), bytes);
  CHECK(kiln::read_file(dir.file("data")) == bytes);
  kiln::write_file_atomically(dir.file("empty"), "");
  CHECK(kiln::read_file(dir.file("empty")).empty());
  CHECK_THROWS_WITH_AS(kiln::read_file(dir.file("missing")),
                       ("cannot read " + dir.file("missing") + ": No such file or directory").c_str(), Error);
  std::filesystem::create_directory(dir.file("sub"));
  CHECK_THROWS_WITH_AS(kiln::read_file(dir.file("sub")), doctest::Contains(("cannot read " + dir.file("sub")).c_str()), Error);
}
