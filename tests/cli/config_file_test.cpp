// --config-file's refusals: what CLI11's reader would take without a word, or
// report as "The following argument was not expected", is an error naming the
// file, the line and the key, exit 2, before any work.
#include <doctest/doctest.h>

#include "cli/run_kiln.h"
#include "text_and_files.h"

namespace {

// kiln train --config-file FILE with `extra` flags: its exit status and stderr.
KilnResult train_with(const TempDir& dir, const std::string& settings, std::vector<std::string> extra = {}) {
  const std::string path = dir.file("settings.toml");
  write_file(path, settings);
  std::vector<std::string> args = {"train", "--config-file", path, "--checkpoint", dir.file("ckpt")};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_kiln(args);
}

}  // namespace

TEST_CASE("--config-file: an action key, a duplicate key, an array, an unterminated string name file, line and key") {
  TempDir dir;
  const std::string file = "--config-file " + dir.file("settings.toml");
  struct Case {
    std::string settings;
    std::vector<std::string> extra;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"task = \"copy\"\nhelp = true\n", {}, file + ":2: key 'help' is an action, not a setting"},
      {"version = true\n", {}, file + ":1: key 'version' is an action"},
      {"task = \"copy\"\nsteps = 1\n\nsteps = 32\n", {}, file + ":4: key 'steps' is given twice (first on line 2)"},
      {"task = \"copy\"\nsteps = [1, 32]\n", {}, file + ":2: key 'steps' has an array value"},
      {"task = \"copy\nsteps = 1\n", {}, file + ":1: key 'task': the string is not terminated"},
      // The command line gives the flag too: the file is still wrong.
      {"task = \"copy\nsteps = 1\n", {"--task", "copy"}, file + ":1: key 'task': the string is not terminated"},
      {"steps = 1\nsteps = 2\n", {"--steps", "1"}, file + ":2: key 'steps' is given twice"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.settings);
    const KilnResult r = train_with(dir, c.settings, c.extra);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.err.find(c.message) != std::string::npos, r.err);
    CHECK(r.out.find("Usage") == std::string::npos);  // --help did not run
    CHECK_FALSE(std::filesystem::exists(dir.file("ckpt")));
  }
}

TEST_CASE("--config-file: a UTF-8 byte-order mark at its start is not part of the first key") {
  TempDir dir;
  const KilnResult r = train_with(dir, "\xEF\xBB\xBFtask = \"copy\"\nsteps = 1\nd-model = 16\nheads = 2\nd-ff = 32\n"
                                       "layers = 1\nbackend = \"interp\"\neval-sentences = 2\n");
  CHECK_MESSAGE(r.status == 0, r.err);
}
