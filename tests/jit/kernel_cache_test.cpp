// The kernel cache's directory is a place others may write: what is planted in
// it (a symlink, a FIFO, a directory) is never written through, never hangs a
// read and never breaks a compile; it reads as a miss. Turned off, the cache
// neither reads nor writes it.
#include "compiler/jit/kernel_cache.h"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "cli/temp_dir.h"
#include "compiler/jit_executable.h"
#include "engine/ir/parser.h"
#include "text_and_files.h"
#include "side_files.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// Whether `work` returns true in a child process within `limit`: a read that
// blocks forever fails the test instead of hanging it.
bool finishes_true_within(std::chrono::seconds limit, const std::function<bool()>& work) {
  const pid_t child = fork();
  if (child == 0) _exit(work() ? 0 : 1);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("kernel cache: a symlink planted in the directory is never written through") {
  TempDir dir;
  const std::string cache_dir = dir.file("cache"), victim = dir.file("victim.txt");
  std::ofstream(victim) << "the user's file";
  fs::create_directory(cache_dir);
  compiler::KernelCache cache(cache_dir);
  const std::string entry = cache_dir + "/kernel.o";
  // Links at the entry itself and at every name the old temporaries had (PATH.tmp.PID.N).
  fs::create_symlink(victim, entry);
  for (int n = 0; n < 64; ++n)
    fs::create_symlink(victim, entry + ".tmp." + std::to_string(getpid()) + "." + std::to_string(n));
  CHECK_FALSE(cache.load("kernel", "key").has_value());  // a link is not followed
  cache.store("kernel", "key", "object");
  CHECK(cache.enabled());
  CHECK(read_file(victim) == "the user's file");
  CHECK_FALSE(fs::is_symlink(entry));
  CHECK(cache.load("kernel", "key") == "object");
  CHECK(side_files(entry).empty());
}

TEST_CASE(
    "kernel cache: a FIFO, a directory or a link to a device at an entry's path is a miss at once, then replaced") {
  TempDir dir;
  compiler::KernelCache cache(dir.file("cache"));
  cache.store("first", "key", "object");  // creates the directory
  REQUIRE(mkfifo(dir.file("cache/fifo.o").c_str(), 0644) == 0);
  fs::create_directory(dir.file("cache/dir.o"));
  fs::create_symlink("/dev/null", dir.file("cache/null.o"));
  for (const char* symbol : {"fifo", "dir", "null"}) {
    CAPTURE(symbol);
    CHECK(finishes_true_within(std::chrono::seconds(10), [&] { return !cache.load(symbol, "key").has_value(); }));
  }
  cache.store("fifo", "key", "compiled again");
  CHECK(fs::is_regular_file(fs::symlink_status(dir.file("cache/fifo.o"))));
  CHECK(cache.load("fifo", "key") == "compiled again");
}

TEST_CASE("kernel cache: temporaries of a killed writer are removed by the next store, a live writer's kept") {
  TempDir dir;
  const std::string cache_dir = dir.file("cache");
  fs::create_directory(cache_dir);
  const std::string stale = cache_dir + "/other.o.tmp-" + std::to_string(dead_pid()) + "-0123456789abcdef";
  const std::string live = cache_dir + "/other.o.tmp-" + std::to_string(getpid()) + "-0123456789abcdef";
  std::ofstream(stale) << "half an entry";
  std::ofstream(live) << "being written";
  compiler::KernelCache cache(cache_dir);
  cache.store("kernel", "key", "object");
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(live));
  CHECK(cache.load("kernel", "key") == "object");
}

TEST_CASE("kernel cache off (--no-cache, cache=False): nothing is read from its directory and nothing written") {
  TempDir dir;
  // Shapes no other test uses, so no kernel of it is loaded in this process already.
  const Graph g = parse_kir(
      "graph @no_cache {\n"
      "  input %x : f32[37,53]\n"
      "  %e = exp(%x) : f32[37,53]\n"
      "  %s = sum(%e) {axes=[1], keepdims=true} : f32[37,1]\n"
      "  %y = div(%e, %s) : f32[37,53]\n"
      "  output %y\n"
      "}\n",
      "no_cache.kir");
  compiler::JitOptions on;
  on.kernels.cache_dir = dir.file("cache");
  compiler::JitOptions off = on;
  off.kernels.cache = false;
  // What the directory holds: every file's name, size and modification time.
  const auto listing = [&] {
    std::map<std::string, std::pair<uintmax_t, fs::file_time_type>> files;
    for (const auto& e : fs::recursive_directory_iterator(dir.file("cache")))
      files[e.path().string()] = {e.is_regular_file() ? e.file_size() : 0, e.last_write_time()};
    return files;
  };
  {
    compiler::JitExecutable filled(g, on);
    REQUIRE(filled.compile_times().compiled == filled.compile_times().kernels);
  }
  const auto before = listing();
  REQUIRE(!before.empty());
  {
    compiler::JitExecutable uncached(g, off);
    CHECK(uncached.compile_times().from_disk == 0);  // not read, though every entry is there
    CHECK(uncached.compile_times().compiled == uncached.compile_times().kernels);
  }
  CHECK(listing() == before);  // not written
  {
    compiler::JitExecutable cached(g, on);  // the entries were there to read
    CHECK(cached.compile_times().from_disk == cached.compile_times().kernels);
  }
  off.kernels.cache_dir = dir.file("never");
  compiler::JitExecutable elsewhere(g, off);
  CHECK_FALSE(fs::exists(dir.file("never")));
}
