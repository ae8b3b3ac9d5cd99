// One writer per run directory: while a kiln command writes DIR (here this
// test holds the lock, as a running `kiln train` does), kiln train, average and
// prepare into DIR refuse at once, exit 1, naming the flag and DIR, and write
// nothing there; a writer killed with SIGKILL leaves no lock behind.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "cli/run_kiln.h"
#include "engine/ir/error.h"
#include "engine/run_dir_lock.h"
#include "text_and_files.h"

namespace fs = std::filesystem;

TEST_CASE("kiln train, average and prepare refuse a run directory another kiln command is writing") {
  TempDir dir;
  const std::string run = dir.file("run");
  const std::vector<std::string> train = {"train",     "--task",   "copy", "--steps",  "1", "--d-model",
                                          "16",        "--heads",  "2",    "--d-ff",   "32", "--layers",
                                          "1",         "--backend", "interp", "--eval-sentences", "2"};
  std::vector<std::string> first = train;
  first.insert(first.end(), {"--checkpoint", run});
  REQUIRE(run_kiln(first).status == 0);
  std::optional<kiln::RunDirLock> held;
  held.emplace(dir.file("busy"), "--checkpoint");

  std::vector<std::string> second = train;
  second.insert(second.end(), {"--checkpoint", dir.file("busy")});
  KilnResult r = run_kiln(second);
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("--checkpoint " + dir.file("busy") + ": another kiln command is writing this directory") !=
                    std::string::npos,
                r.err);
  CHECK(fs::is_empty(dir.file("busy")));

  r = run_kiln({"average", run, run, "-o", dir.file("busy")});
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("--output " + dir.file("busy") + ": another kiln command") != std::string::npos, r.err);
  CHECK(fs::is_empty(dir.file("busy")));

  write_file(dir.file("c.es"), "uno dos\ntres\n");
  write_file(dir.file("c.en"), "one two\nthree\n");
  r = run_kiln({"prepare", "--train", dir.file("c"), "--valid", dir.file("c"), "--src-lang", "es", "--tgt-lang", "en",
                "--vocab-size", "20", "-o", dir.file("busy")});
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("--output " + dir.file("busy") + ": another kiln command") != std::string::npos, r.err);
  CHECK(fs::is_empty(dir.file("busy")));

  // Once the first writer is gone, the directory is free again.
  held.reset();
  r = run_kiln(second);
  CHECK_MESSAGE(r.status == 0, r.err);
}

TEST_CASE("a run directory's lock goes with its holder, even one killed by SIGKILL") {
  TempDir dir;
  const std::string run = dir.file("run");
  int ready[2];
  REQUIRE(pipe(ready) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    const kiln::RunDirLock lock(run, "--checkpoint");
    const char byte = 1;
    if (write(ready[1], &byte, 1) != 1) _exit(1);
    for (;;) pause();
  }
  char byte = 0;
  REQUIRE(read(ready[0], &byte, 1) == 1);
  CHECK_THROWS_AS(kiln::RunDirLock(run, "--checkpoint"), kiln::Error);
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK_NOTHROW(kiln::RunDirLock(run, "--checkpoint"));
  close(ready[0]);
  close(ready[1]);
}
