// Replays every file of each fuzz target's corpus (corpus/TARGET/) through the
// target: how CI runs what the fuzzers found without libFuzzer. A file that makes
// a target throw anything but kiln::Error (a FuzzFailure, another exception) or
// crash fails here, under the sanitizers too in the ASan build.
#include <doctest/doctest.h>

#include <filesystem>

#include "fuzz/fuzz_targets.h"
#include "read_file.h"

using namespace kiln::fuzz;
namespace fs = std::filesystem;

TEST_CASE("every corpus file of every fuzz target is accepted or rejected with a kiln::Error") {
  for (const Target& target : targets()) {
    const std::string name = target.name;
    CAPTURE(name);
    const fs::path dir = fs::path(KILN_SOURCE_DIR) / "tests/fuzz/corpus" / target.name;
    int accepted = 0, rejected = 0;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string file = entry.path().string();
      CAPTURE(file);
      try {
        (target.run(read_file(file)) == Outcome::accepted ? accepted : rejected)++;
      } catch (const std::exception& e) {
        FAIL_CHECK(e.what());
      }
    }
    MESSAGE(name << ": " << accepted << " accepted, " << rejected << " rejected");
    // A corpus that only fails to parse never reaches the checks after parsing.
    CHECK(accepted > 0);
    CHECK(rejected > 0);
  }
}
