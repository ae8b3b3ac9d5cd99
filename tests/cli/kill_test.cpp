// Nothing lost: a checkpointing run killed with SIGKILL at random moments, again
// and again, always leaves a checkpoint that loads (once it has written one),
// and the temporaries of killed writes do not pile up.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <thread>

#include "cli/run_kiln.h"
#include "models/checkpoint.h"
#include "side_files.h"

extern char** environ;

namespace fs = std::filesystem;

namespace {

// Starts kiln with `args` (stdout and stderr to /dev/null) and returns its pid.
pid_t spawn_kiln(const std::vector<std::string>& args) {
  std::vector<std::string> argv_storage = {KILN_BINARY};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, KILN_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(err == 0);
  return pid;
}

}  // namespace

TEST_CASE("kill -9 at random moments, 20 times: a checkpoint that loads is always there, no temporaries pile up") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int> delay_ms(150, 1500);
  int loaded = 0;
  for (int kill = 0; kill < 20; ++kill) {
    const bool resume = fs::exists(kiln::models::checkpoint_file(ckpt));
    std::vector<std::string> args = {"train", "--task", "copy", "--steps", "100000", "--save-every", "1",
                                     "--checkpoint", ckpt, "--d-model", "16", "--heads", "2", "--d-ff", "32",
                                     "--layers", "1", "--backend", "interp", "--eval-sentences", "4"};
    if (resume) args.push_back("--resume");
    const pid_t pid = spawn_kiln(args);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms(rng)));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    waitpid(pid, &status, 0);
    INFO("kill ", kill + 1);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));  // killed mid-run, not finished or failed
    if (!fs::exists(kiln::models::checkpoint_file(ckpt))) continue;  // killed before its first save
    CHECK_NOTHROW(kiln::models::load_checkpoint(ckpt));
    ++loaded;
    // At most the one temporary the last kill interrupted; the next write removes it.
    CHECK(side_files(kiln::models::checkpoint_file(ckpt)).size() <= 1);
  }
  CHECK(loaded >= 15);  // most kills came after the first save
  MESSAGE(loaded, " of 20 kills left a checkpoint that loads; none left a broken one");
}
