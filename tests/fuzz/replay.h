#pragma once
// Replays every file of a fuzz target's corpus (corpus/TARGET/) through the
// target: how CI runs what the fuzzers found without libFuzzer. A file that makes
// the target throw anything but kiln::Error (a FuzzFailure, another exception) or
// crash fails, under the sanitizers too in the ASan build.
#include <doctest/doctest.h>

#include <filesystem>

#include "fuzz/fuzz_targets.h"
#include "text_and_files.h"

namespace kiln::fuzz {

inline void replay_corpus(const Target& target) {
  const std::string name = target.name;
  CAPTURE(name);
  const std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / "tests/fuzz/corpus" / target.name;
  int accepted = 0, rejected = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().string();
    CAPTURE(file);
    try {
      (target.run(read_file(file)) == Outcome::accepted ? accepted : rejected)++;
    } catch (const std::exception& e) {
      FAIL_CHECK(std::string(e.what()));  // a std::string: doctest prints a char* as a pointer
    }
  }
  MESSAGE(name << ": " << accepted << " accepted, " << rejected << " rejected");
  // A corpus that only fails to parse never reaches the checks after parsing.
  CHECK(accepted > 0);
  CHECK(rejected > 0);
}

}  // namespace kiln::fuzz
