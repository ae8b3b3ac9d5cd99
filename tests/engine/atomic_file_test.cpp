// Atomic writes: a file is replaced whole or not at all, several files all or
// none, temporaries are created exclusively (a planted symlink is never
// followed) and never pile up, and a write that fails half-way (a full disk)
// keeps the previous file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "engine/atomic_file.h"
#include "text_and_files.h"
#include "file_size_limit.h"
#include "side_files.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

}  // namespace

TEST_CASE("an atomic write replaces the file whole and leaves nothing beside it") {
  TempDir dir;
  const std::string path = dir.file("out.txt");
  write_file_atomically(path, "first");
  write_file_atomically(path, "second");
  CHECK(read_file(path) == "second");
  CHECK(side_files(path).empty());
}

TEST_CASE("a symlink planted at the old temporary name is not followed") {
  TempDir dir;
  const std::string victim = dir.file("victim.txt"), path = dir.file("out.txt");
  put(victim, "the user's file");
  fs::create_symlink(victim, path + ".tmp");  // the name every write used to go through
  write_file_atomically(path, "output");
  CHECK(read_file(victim) == "the user's file");
  CHECK(read_file(path) == "output");
  CHECK(fs::is_symlink(path + ".tmp"));  // not ours: left alone
}

TEST_CASE("temporaries of a killed process are removed, those of a live one kept") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  const std::string stale = path + ".tmp-" + std::to_string(dead_pid()) + "-0123456789abcdef";
  const std::string live = path + ".tmp-" + std::to_string(getpid()) + "-fedcba9876543210";
  put(stale, "half a checkpoint");
  put(live, "a concurrent writer's");
  write_file_atomically(path, "whole");
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
}

TEST_CASE("a write that fails half-way (a full disk) keeps the previous file and says so") {
  TempDir dir;
  const std::string path = dir.file("out.bin");
  write_file_atomically(path, "previous");
  {
    const FileSizeLimit full_disk(1000);
    check_error([&] { write_file_atomically(path, std::string(5000, 'x')); }, {path, "cannot write", "File too large"});
  }
  CHECK(read_file(path) == "previous");
  CHECK(side_files(path).empty());
}

TEST_CASE("several files are written all or none") {
  TempDir dir;
  const std::string a = dir.file("a.o"), b = dir.file("a.h");
  put(a, "old object");
  put(b, "old header");

  // The second cannot be staged (its directory is missing): the first is untouched.
  check_error([&] { write_files_atomically({{a, "new object"}, {dir.file("missing/a.h"), "new header"}}); },
              {dir.file("missing/a.h"), "none of the 2 files was changed"});
  CHECK(read_file(a) == "old object");

  // The second cannot replace its path (a directory is there): the first gets its old contents back.
  fs::create_directory(dir.file("taken"));
  put(dir.file("taken/inside"), "x");
  check_error([&] { write_files_atomically({{a, "new object"}, {dir.file("taken"), "new header"}}); },
              {dir.file("taken"), "cannot replace it", "none of the 2 files was changed"});
  CHECK(read_file(a) == "old object");
  CHECK(side_files(a).empty());
  CHECK(side_files(dir.file("taken")).empty());

  // A new file that was created before a later one failed is removed again.
  const std::string fresh = dir.file("fresh.o");
  check_error([&] { write_files_atomically({{fresh, "new"}, {dir.file("taken"), "new header"}}); }, {"taken"});
  CHECK_FALSE(fs::exists(fresh));

  write_files_atomically({{a, "new object"}, {b, "new header"}});
  CHECK(read_file(a) == "new object");
  CHECK(read_file(b) == "new header");
  CHECK(side_files(a).empty());
  CHECK(side_files(b).empty());
}

TEST_CASE("a symlink at PATH is replaced by the file, never written through") {
  TempDir dir;
  const std::string victim = dir.file("victim.txt"), path = dir.file("ids.txt");
  put(victim, "the user's file");
  fs::create_symlink(victim, path);
  write_file_atomically(path, "output");
  CHECK(read_file(victim) == "the user's file");
  CHECK_FALSE(fs::is_symlink(path));
  CHECK(read_file(path) == "output");
}

TEST_CASE("a cache entry's write leaves the directory alone; one sweep removes every stale temporary in it") {
  TempDir dir;
  const std::string dead = std::to_string(dead_pid()), live = std::to_string(getpid());
  const std::vector<std::string> stale = {"a.o.tmp-" + dead + "-0123456789abcdef",
                                          "b.o.bak-" + dead + "-fedcba9876543210"};
  const std::vector<std::string> kept = {
      "c.o.tmp-" + live + "-0123456789abcdef",  // a concurrent writer's
      "d.o.tmp-" + dead + "-0123456789",        // not a temporary's name: too short a suffix
      ".tmp-" + dead + "-0123456789abcdef",     // nor this: no file it stands in for
      "e.o.tmp-" + dead + "-0123456789abcdef.o"};
  for (const auto& name : stale) put(dir.file(name), "half an entry");
  for (const auto& name : kept) put(dir.file(name), "not stale");
  write_file_atomically(dir.file("f.o"), "entry", Durability::cache_entry);
  CHECK(read_file(dir.file("f.o")) == "entry");
  CHECK(side_files(dir.file("f.o")).empty());
  for (const auto& name : stale) CHECK(fs::exists(dir.file(name)));
  remove_stale_temporaries_in(dir.path().string());
  for (const auto& name : stale) CHECK_FALSE(fs::exists(dir.file(name)));
  for (const auto& name : kept) CHECK(fs::exists(dir.file(name)));
}

TEST_CASE("files made of pieces are written all or none") {
  TempDir dir;
  const std::string a = dir.file("model.safetensors"), b = dir.file("spm.model");
  put(a, "old checkpoint");
  const std::string header = "head:", tensor1 = "one,", tensor2 = "two";
  fs::create_directory(dir.file("taken"));
  put(dir.file("taken/inside"), "x");
  check_error(
      [&] { write_files_atomically(std::vector<FilePieces>{{a, {header, tensor1}}, {dir.file("taken"), {tensor2}}}); },
      {dir.file("taken"), "none of the 2 files was changed"});
  CHECK(read_file(a) == "old checkpoint");
  write_files_atomically(std::vector<FilePieces>{{a, {header, tensor1, tensor2}}, {b, {tensor2}}});
  CHECK(read_file(a) == "head:one,two");
  CHECK(read_file(b) == "two");
  CHECK(side_files(a).empty());
  CHECK(side_files(b).empty());
}
