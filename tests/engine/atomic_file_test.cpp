// Atomic writes: a file is replaced whole or not at all, several files all or
// none, temporaries are created exclusively (a planted symlink is never
// followed) and never pile up, and a write that fails half-way (a full disk)
// keeps the previous file.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "engine/atomic_file.h"
#include "read_file.h"
#include "file_size_limit.h"
#include "side_files.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

void put(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// The pid of a process that has exited (and been reaped): no process has it now.
pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

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
